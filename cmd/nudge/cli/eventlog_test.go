package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/controlmode"
)

// readEvents returns the kept events after since that c may see (no follow).
func readEvents(t *testing.T, c *api.Client, since uint64) []api.Event {
	t.Helper()
	var out []api.Event
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := c.Events(ctx, api.EventsOptions{Since: since}, func(ev api.Event) error {
		out = append(out, ev)
		return nil
	})
	if err != nil {
		t.Fatalf("events since %d: %v", since, err)
	}
	return out
}

// prompted returns the seq of the first trigger event carrying prompt, or 0.
func prompted(evs []api.Event, prompt string) uint64 {
	for _, ev := range evs {
		if ev.Trigger != nil && ev.Trigger.Prompt == prompt {
			return ev.Seq
		}
	}
	return 0
}

// unixGet sends a GET with headers to the daemon's socket.
func unixGet(ctx context.Context, socket, path string, hdr map[string]string) (*http.Response, error) {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://nudge"+path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return (&http.Client{Transport: tr}).Do(req)
}

// TestEventsDurable: event numbers go on across a daemon restart; ?since= replays the
// events of before the restart and then follows; a workspace token's replay holds only
// its workspace; SSE carries id: lines and resumes from Last-Event-ID; a reader behind the
// kept window gets 410 EVENTS_EXPIRED naming what it missed.
func TestEventsDurable(t *testing.T) {
	cfg := newTestConfig(t)
	td := startDaemon(t, cfg)
	rt1, _ := rawCat(t, td, "w1", "rev")
	rawCat(t, td, "w2", "rev")
	send := func(td *testDaemon, ws, id, prompt string) {
		t.Helper()
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace": ws, "agent": "rev", "prompt": prompt}); err != nil {
			t.Fatal(err)
		}
		td.waitTrigger(id, func(tr nudge.Trigger) bool { return tr.State == "submitted" || tr.Closed })
	}
	send(td, "w1", "b1", "BEFORE-W1")
	send(td, "w2", "b2", "BEFORE-W2")
	admin := api.NewClient(cfg.Socket, "")
	defer admin.Close()
	before := readEvents(t, admin, 0)
	if prompted(before, "BEFORE-W1") == 0 || prompted(before, "BEFORE-W2") == 0 {
		t.Fatalf("replay before the restart lacks the triggers: %d events", len(before))
	}
	lastBefore := before[len(before)-1].Seq
	td.stop()

	td = startDaemon(t, cfg)
	td.waitRuntime(rt1.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	send(td, "w1", "a1", "AFTER-W1")
	after := readEvents(t, admin, lastBefore)
	if len(after) == 0 || after[0].Seq <= lastBefore || prompted(after, "AFTER-W1") == 0 {
		t.Fatalf("after the restart: first seq %v (last before %d), AFTER-W1 at %d",
			seqList(after), lastBefore, prompted(after, "AFTER-W1"))
	}
	// The CLI: `nudge events --since N -o json` prints the daemon's lines; the table one
	// line per event.
	out, errOut, code := td.runCLI("events", "--since", fmt.Sprint(lastBefore), "-o", "json")
	if code != 0 || !strings.Contains(out, `"prompt":"AFTER-W1"`) || strings.Contains(out, "BEFORE-W1") {
		t.Fatalf("nudge events --since %d -o json: exit %d\n%s%s", lastBefore, code, out, errOut)
	}
	if out, errOut, code := td.runCLI("events", "--since", fmt.Sprint(lastBefore)); code != 0 || !strings.Contains(out, "trigger=a1") {
		t.Fatalf("nudge events: exit %d\n%s%s", code, out, errOut)
	}
	all := readEvents(t, admin, 0)
	for i := 1; i < len(all); i++ {
		if all[i].Seq <= all[i-1].Seq {
			t.Fatalf("sequence not increasing at %d: %d after %d", i, all[i].Seq, all[i-1].Seq)
		}
	}
	if prompted(all, "BEFORE-W2") == 0 || prompted(all, "AFTER-W1") == 0 {
		t.Fatal("the full replay lacks events of before or after the restart")
	}

	// A workspace token replays its own workspace only, from before the restart too.
	scoped := api.NewClient(cfg.Socket, td.issue(t, "--subject", "orch", "--workspace", "w1", "--verbs", "trigger", "--ttl", "1h"))
	defer scoped.Close()
	mine := readEvents(t, scoped, 0)
	if prompted(mine, "BEFORE-W1") == 0 || prompted(mine, "AFTER-W1") == 0 {
		t.Fatal("scoped replay lacks its own workspace's triggers")
	}
	for _, ev := range mine {
		if ev.Workspace != "w1" {
			b, _ := json.Marshal(ev)
			t.Fatalf("scoped replay shows another workspace's event: %s", b)
		}
	}

	// Replay since=N, then follow: the replayed events, then a live one, nothing twice.
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var followed []api.Event
	done := make(chan error, 1)
	go func() {
		done <- admin.Events(ctx, api.EventsOptions{Since: lastBefore, Follow: true}, func(ev api.Event) error {
			mu.Lock()
			followed = append(followed, ev)
			mu.Unlock()
			return nil
		})
	}()
	send(td, "w1", "l1", "LIVE-W1")
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		got := append([]api.Event(nil), followed...)
		mu.Unlock()
		if prompted(got, "LIVE-W1") != 0 {
			if prompted(got, "AFTER-W1") == 0 || got[0].Seq <= lastBefore {
				t.Fatalf("follow since %d: %v", lastBefore, seqList(got))
			}
			for i := 1; i < len(got); i++ {
				if got[i].Seq <= got[i-1].Seq {
					t.Fatalf("follow repeated or reordered: %v", seqList(got))
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the live trigger never followed the replay: %v", seqList(got))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("follow ended with %v", err)
	}

	// SSE: id: lines, resumed after Last-Event-ID.
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	resp, err := unixGet(sctx, cfg.Socket, "/v1/events", map[string]string{"Accept": "text/event-stream", "Last-Event-ID": fmt.Sprint(lastBefore)})
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("SSE content type %q", ct)
	}
	br := bufio.NewReader(resp.Body)
	idLine, _ := br.ReadString('\n')
	dataLine, _ := br.ReadString('\n')
	resp.Body.Close()
	var first api.Event
	if err := json.Unmarshal([]byte(strings.TrimPrefix(dataLine, "data: ")), &first); err != nil {
		t.Fatalf("SSE data %q: %v", dataLine, err)
	}
	if idLine != fmt.Sprintf("id: %d\n", first.Seq) || first.Seq != after[0].Seq {
		t.Fatalf("SSE resumed at %q (data seq %d), want the first event after %d (%d)", idLine, first.Seq, lastBefore, after[0].Seq)
	}

	// A reader behind the kept window: 410, EVENTS_EXPIRED, which events it missed.
	td.stop()
	cfg.Events.Keep = 3
	td = startDaemon(t, cfg)
	deadline = time.Now().Add(30 * time.Second)
	for {
		resp, err := unixGet(context.Background(), cfg.Socket, "/v1/events?since=1&follow=0", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusGone {
			var ae api.Error
			if json.Unmarshal(body, &ae) != nil || ae.ErrorCode != "EVENTS_EXPIRED" || !strings.Contains(ae.Message, "events after 1 are no longer kept") {
				t.Fatalf("expired answer: %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("since=1 with 3 events kept: %d %s", resp.StatusCode, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := admin.Events(context.Background(), api.EventsOptions{Since: 1}, func(api.Event) error { return nil }); err == nil {
		t.Fatal("client: no error for an expired since")
	}
	if _, errOut, code := td.runCLI("events", "--since", "1"); code != 1 || !strings.Contains(errOut, "EVENTS_EXPIRED") {
		t.Fatalf("nudge events --since 1 (expired): exit %d: %s", code, errOut)
	}
}

func seqList(evs []api.Event) []uint64 {
	var out []uint64
	for _, ev := range evs {
		out = append(out, ev.Seq)
	}
	return out
}

// TestNotifyCommandWired: serve --notify-command gets a failed trigger's event JSON on
// stdin; while it hangs (until its timeout) triggers are still delivered.
func TestNotifyCommandWired(t *testing.T) {
	out := filepath.Join(t.TempDir(), "notified.json")
	t.Setenv("NOTIFY_TEST_OUT", out)
	cfg := newTestConfig(t)
	cfg.Notify.Command = `cat > "$NOTIFY_TEST_OUT.tmp"; mv "$NOTIFY_TEST_OUT.tmp" "$NOTIFY_TEST_OUT"; sleep 300`
	cfg.Notify.Timeout, cfg.Notify.MaxRunning = 3*time.Second, 1
	td := startDaemon(t, cfg)
	rawCat(t, td, "w1", "rev")
	td.d.Rooms().Events.Publish(Event{Type: "trigger", Workspace: "w1",
		Trigger: nudge.Trigger{TriggerID: "failed-one", WorkspaceID: "w1", Agent: "rev", State: nudge.StateFailed, ErrorCode: nudge.AckTimeout}})
	var got []byte
	deadline := time.Now().Add(30 * time.Second)
	for len(got) == 0 && time.Now().Before(deadline) {
		got, _ = os.ReadFile(out)
		time.Sleep(20 * time.Millisecond)
	}
	var ev api.Event
	if err := json.Unmarshal(got, &ev); err != nil || ev.Trigger == nil || ev.Trigger.TriggerID != "failed-one" || ev.Seq == 0 {
		t.Fatalf("notify command stdin %q: %v", got, err)
	}
	// The command hangs; a trigger goes through all the same.
	if _, err := td.trigger(map[string]any{"trigger_id": "while-notifying", "workspace": "w1", "agent": "rev", "prompt": "go on"}); err != nil {
		t.Fatal(err)
	}
	if tr := td.waitTrigger("while-notifying", closed); tr.State != nudge.StateAcked {
		t.Fatalf("trigger while the notify command hangs: %+v", tr)
	}
}

// TestNotifyRealTransitions: a real shell runtime that asks a question and is answered
// notifies NEEDS_CONFIRMATION, then READY: a display-message on the operator's attached
// tmux client (a real client on a pty) and the --notify-command's stdin.
func TestNotifyRealTransitions(t *testing.T) {
	out := filepath.Join(t.TempDir(), "notified.ndjson")
	t.Setenv("NOTIFY_TEST_OUT", out)
	cfg := newTestConfig(t)
	cfg.Notify.Command = `cat >> "$NOTIFY_TEST_OUT"`
	td := startDaemon(t, cfg)
	rt := td.spawnShell("w1", "asker", "sh", "-c", `PS1='$ ' exec sh -i`)
	screen := attachPTY(t, td.cfg.Panes.SocketName, "=agents_w1")
	notified := func(s string) bool { b, _ := os.ReadFile(out); return strings.Contains(string(b), s) }
	wait := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(40 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				b, _ := os.ReadFile(out)
				t.Fatalf("never: %s\nnotify command got:\n%s", what, b)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	td.tmux("send-keys", "-t", rt.PaneID, "-l", `printf 'Do you want to continue? (y/N) '; read x`)
	td.tmux("send-keys", "-t", rt.PaneID, "Enter")
	// tmux 3.2's display-message cannot name a client: there the command alone carries them.
	shown := controlmode.ParseVersion(td.tmux("display-message", "-p", "#{version}")).DisplayToClient()
	if shown {
		wait("NEEDS_CONFIRMATION on the attached client", func() bool { return screen.has("asker (w1) is NEEDS_CONFIRMATION") })
	}
	wait("NEEDS_CONFIRMATION to the command", func() bool { return notified(`"readiness":"NEEDS_CONFIRMATION"`) })
	td.tmux("send-keys", "-t", rt.PaneID, "-l", "y")
	td.tmux("send-keys", "-t", rt.PaneID, "Enter")
	if shown {
		wait("READY on the attached client", func() bool { return screen.has("asker (w1) is READY") })
	}
	wait("READY to the command", func() bool { return notified(`"readiness":"READY"`) })
}

// ptyScreen is what a tmux client attached through a pty has been sent.
type ptyScreen struct {
	mu  sync.Mutex
	buf []byte
}

func (s *ptyScreen) has(text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Contains(string(s.buf), text)
}

// attachPTY attaches a real tmux client to session through a pty, as an operator's
// terminal, and records what it is sent.
func attachPTY(t *testing.T, socket, session string) *ptyScreen {
	t.Helper()
	cmd := exec.Command("tmux", "-L", socket, "attach-session", "-t", session)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "TMUX=")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	s := &ptyScreen{}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		b := make([]byte, 4096)
		for {
			n, err := f.Read(b)
			s.mu.Lock()
			s.buf = append(s.buf, b[:n]...)
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
		<-copied
	})
	return s
}

// TestEventsFollowAcrossRestart: a followed stream (api.Client.Events, nudge events
// --follow) outlives a daemon restart: it resumes after the last event it got and sees
// what happened after the restart, nothing twice.
func TestEventsFollowAcrossRestart(t *testing.T) {
	cfg := newTestConfig(t)
	td := startDaemon(t, cfg)
	rt, _ := rawCat(t, td, "w1", "rev")
	c := api.NewClient(cfg.Socket, "")
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var got []api.Event
	done := make(chan error, 1)
	go func() {
		done <- c.Events(ctx, api.EventsOptions{Follow: true}, func(ev api.Event) error {
			mu.Lock()
			got = append(got, ev)
			mu.Unlock()
			return nil
		})
	}()
	seen := func(prompt string) bool { mu.Lock(); defer mu.Unlock(); return prompted(got, prompt) != 0 }
	wait := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(40 * time.Second)
		for !ok() {
			select {
			case err := <-done:
				t.Fatalf("the followed stream ended while waiting for %s: %v", what, err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if _, err := td.trigger(map[string]any{"trigger_id": "r1", "workspace": "w1", "agent": "rev", "prompt": "BEFORE"}); err != nil {
		t.Fatal(err)
	}
	wait("the trigger before the restart", func() bool { return seen("BEFORE") })
	td.stop()
	td = startDaemon(t, cfg)
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	if _, err := td.trigger(map[string]any{"trigger_id": "r2", "workspace": "w1", "agent": "rev", "prompt": "AFTER"}); err != nil {
		t.Fatal(err)
	}
	wait("the trigger after the restart", func() bool { return seen("AFTER") })
	mu.Lock()
	for i := 1; i < len(got); i++ {
		if got[i].Seq <= got[i-1].Seq {
			t.Fatalf("an event twice or out of order across the restart: %v", seqList(got))
		}
	}
	mu.Unlock()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("follow ended with %v", err)
	}
}
