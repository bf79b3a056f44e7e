package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/store"
)

func openHub(t *testing.T) *events.Hub {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "nudge.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := events.Open(events.Config{}, db.Events())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(); db.Close() })
	return h
}

func readiness(ws, id, state, summary string) events.Event {
	d, _ := json.Marshal(map[string]any{"runtime_id": id, "readiness": state, "summary": summary})
	return events.Event{Type: "readiness", Workspace: ws, Detail: d}
}

func failedTrigger(ws, id string) events.Event {
	return events.Event{Type: "trigger", Workspace: ws,
		Trigger: map[string]any{"trigger_id": id, "agent": "rev", "state": "failed", "error_code": "ACK_TIMEOUT"}}
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The command gets the event's JSON on stdin, once per notification, and none of
// nudge's own variables in its environment. Only READY/NEEDS_CONFIRMATION/ERROR
// transitions and failed triggers notify.
func TestCommandGetsEventJSON(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "events.ndjson")
	t.Setenv("NOTIFY_OUT", out)
	t.Setenv("NUDGE_API_TOKEN", "s3cret-token")
	h := openHub(t)
	// Each notification is published once the previous one's line is there, so the lines
	// keep their order; the default pool (4) leaves room for a run still writing its env.
	n := New(Config{Command: `cat >> "$NOTIFY_OUT"; env > "$NOTIFY_OUT.env"`}, h, nil)
	defer n.Close()

	var want []events.Event
	h.Publish(readiness("w1", "rt_w1.rev", "BUSY", ""))  // not a notification
	h.Publish(readiness("w1", "rt_w1.rev", "READY", "")) // READY after BUSY: one
	want = append(want, lastOf(h))
	waitFor(t, "the first notification", func() bool { b, _ := os.ReadFile(out); return len(b) > 0 })
	h.Publish(readiness("w1", "rt_w1.rev", "READY", "")) // no change: none
	h.Publish(failedTrigger("w1", "t1"))
	want = append(want, lastOf(h))
	waitFor(t, "the second notification", func() bool { b, _ := os.ReadFile(out); return bytes.Count(b, []byte("\n")) >= 2 })
	h.Publish(failedTrigger("w1", "t1")) // the same failure again: none
	h.Publish(readiness("w1", "rt_w1.rev", "NEEDS_CONFIRMATION", "Allow?"))
	want = append(want, lastOf(h))
	waitFor(t, "the third notification", func() bool { b, _ := os.ReadFile(out); return bytes.Count(b, []byte("\n")) >= 3 })
	// The daemon publishes its records typed: read without decoding the JSON, same verdicts.
	h.Publish(events.Event{Type: "trigger", Workspace: "w1", Trigger: nudge.Trigger{TriggerID: "t2", Agent: "rev", State: nudge.StateAcked}})
	h.Publish(events.Event{Type: "trigger", Workspace: "w1", Trigger: nudge.Trigger{TriggerID: "t2", Agent: "rev", State: nudge.StateFailed, ErrorCode: nudge.AckTimeout}})
	want = append(want, lastOf(h))
	waitFor(t, "the fourth notification", func() bool { b, _ := os.ReadFile(out); return bytes.Count(b, []byte("\n")) >= 4 })
	exit := 3
	h.Publish(events.Event{Type: "runtime", Workspace: "w1", Runtime: nudge.Runtime{RuntimeID: "rt_w1.rev", Status: nudge.StatusReady}})
	h.Publish(events.Event{Type: "alert", Workspace: "w1", Detail: []byte(`{"kind":"x"}`)})
	h.Publish(events.Event{Type: "runtime", Workspace: "w1", Runtime: nudge.Runtime{RuntimeID: "rt_w1.rev", Status: nudge.StatusFailed, ExitStatus: &exit}})
	want = append(want, lastOf(h))
	waitFor(t, "the fifth notification", func() bool { b, _ := os.ReadFile(out); return bytes.Count(b, []byte("\n")) >= 5 })
	n.Close()

	got, _ := os.ReadFile(out)
	var wantText []byte
	for _, ev := range want {
		wantText = append(append(wantText, ev.JSON()...), '\n')
	}
	if !bytes.Equal(got, wantText) {
		t.Fatalf("command stdin:\n%s\nwant:\n%s", got, wantText)
	}
	env, _ := os.ReadFile(out + ".env")
	if bytes.Contains(env, []byte("NUDGE_")) || bytes.Contains(env, []byte("s3cret")) {
		t.Fatalf("nudge's own variables reached the command:\n%s", env)
	}
}

// lastOf returns the newest event of h as replayed (its JSON as published).
func lastOf(h *events.Hub) events.Event {
	evs, s, _ := h.Replay(h.Last() - 1)
	h.Unsubscribe(s)
	return evs[len(evs)-1]
}

// A command that hangs is killed with its process group at the timeout.
func TestHangingCommandKilled(t *testing.T) {
	h := openHub(t)
	n := New(Config{Command: hangCommand(t), Timeout: time.Second, MaxRunning: 1}, h, nil)
	defer n.Close()
	h.Publish(failedTrigger("w1", "hang"))
	pgid := waitPgid(t)
	waitFor(t, "the process group to be killed at the timeout", func() bool {
		return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
	})
}

// While the pool is full, more notifications are dropped and counted (publishing never
// waits); Close kills a command still running.
func TestFullPoolDropsAndCloseKills(t *testing.T) {
	h := openHub(t)
	n := New(Config{Command: hangCommand(t), Timeout: time.Hour, MaxRunning: 1}, h, nil)
	defer n.Close()
	h.Publish(failedTrigger("w1", "hang"))
	pgid := waitPgid(t)
	for i := range 3 {
		h.Publish(failedTrigger("w1", fmt.Sprintf("more%d", i)))
	}
	waitFor(t, "drops to be counted", func() bool { return n.Dropped() == 3 })
	n.Close()
	// Killed by Close (an hour before its timeout); gone once its members are reaped.
	waitFor(t, "the process group to be gone after Close", func() bool {
		return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
	})
}

// hangCommand is a command that records its process group id and then hangs.
func hangCommand(t *testing.T) string {
	t.Setenv("NOTIFY_PID", filepath.Join(t.TempDir(), "pid"))
	return `echo $$ > "$NOTIFY_PID.tmp"; mv "$NOTIFY_PID.tmp" "$NOTIFY_PID"; sleep 300; echo never`
}

// waitPgid waits for hangCommand to start and returns its process group.
func waitPgid(t *testing.T) int {
	t.Helper()
	var pgid int
	waitFor(t, "the command to start", func() bool {
		b, err := os.ReadFile(os.Getenv("NOTIFY_PID"))
		pgid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pgid > 0
	})
	return pgid
}

// display-message reaches a real client attached to the workspace's session (not the
// control client), and the message is shown literally: a #() in an agent's summary is
// not run by tmux.
func TestDisplayReachesAttachedClient(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("no tmux")
	}
	sock := fmt.Sprintf("nudge-notify-%d", os.Getpid())
	tmux := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("tmux", append([]string{"-L", sock, "-f", "/dev/null"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("tmux %v: %v %s", args, err, out)
		}
	}
	tmux("new-session", "-d", "-s", "agents_w1", "-x", "150", "-y", "30")
	t.Cleanup(func() { exec.Command("tmux", "-L", sock, "kill-server").Run() })
	tmux("set", "-g", "display-time", "30000")

	attach := exec.Command("tmux", "-L", sock, "attach", "-t", "=agents_w1")
	attach.Env = append(os.Environ(), "TERM=xterm")
	ptmx, err := pty.StartWithSize(attach, &pty.Winsize{Rows: 30, Cols: 150})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { ptmx.Close(); attach.Process.Kill(); attach.Wait() }()
	var mu sync.Mutex
	var screen bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := ptmx.Read(buf)
			mu.Lock()
			screen.Write(buf[:k])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	shown := func(s string) bool { mu.Lock(); defer mu.Unlock(); return bytes.Contains(screen.Bytes(), []byte(s)) }

	conn := dialShowing(t, sock)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	waitFor(t, "the client to attach", func() bool {
		r, err := conn.Do(ctx, "list-clients -F '#{client_control_mode}'")
		return err == nil && strings.Contains(strings.Join(r.Lines, ","), "0")
	})

	h := openHub(t)
	marker := filepath.Join(t.TempDir(), "ran")
	n := New(Config{Session: func(ws string) string { return "agents_" + ws }}, h, fakeConns{"w1": conn})
	defer n.Close()
	h.Publish(readiness("w1", "rt_w1.rev", "NEEDS_CONFIRMATION", "Allow #(touch "+marker+")?"))
	waitFor(t, "the message on the attached client", func() bool { return shown("rev (w1) is NEEDS_CONFIRMATION") })
	if !shown("#(touch") {
		t.Errorf("the summary was not shown literally")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("tmux ran the #() in the message")
	}
}

// dialShowing dials session agents_w1 on tmux server sock, closed when the test ends,
// and skips the test on a tmux that shows no message to a client (3.2, see show): the
// notifier neither lists clients nor shows anything there.
func dialShowing(t *testing.T, sock string) *controlmode.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := controlmode.Dial(ctx, controlmode.Config{SocketName: sock, Session: "agents_w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if !conn.Caps().DisplayToClient() {
		t.Skip("this tmux shows no message to a client (3.2, see show): the notifier does not try")
	}
	return conn
}

type fakeConns map[string]*controlmode.Conn

func (f fakeConns) Conn(ws string) (*controlmode.Conn, error) {
	if c, ok := f[ws]; ok {
		return c, nil
	}
	return nil, errors.New("no connection")
}

var _ Conns = fakeConns(nil)

func TestLiteral(t *testing.T) {
	for i, tt := range []struct{ in, want string }{
		{"plain", "plain"},
		{"a #{pane_id} #(id) ##", "a ##{pane_id} ##(id) ####"},
		{"line\nbreak\x1b[31m", "line break [31m"},
		{strings.Repeat("x", 300), strings.Repeat("x", 199) + "…"},
	} {
		if got := Literal(tt.in); got != tt.want {
			t.Errorf("#%d: got %q, want %q", i, got, tt.want)
		}
	}
}

// Which events notify, and what the message says.
func TestMessages(t *testing.T) {
	n := &Notifier{readiness: map[string]string{}, status: map[string]string{}, failed: map[string]struct{}{}}
	one := 1
	rt := func(status string, exit *int) *view {
		v := &view{Type: "runtime", Workspace: "w"}
		v.Runtime = &runtimeView{"rt_w.rev", status, exit}
		return v
	}
	rd := func(state, summary string) *view {
		v := &view{Type: "readiness", Workspace: "w"}
		v.Detail.RuntimeID, v.Detail.Readiness, v.Detail.Summary = "rt_w.rev", state, summary
		return v
	}
	for i, tt := range []struct {
		v    *view
		want string
	}{
		{rd("READY", ""), ""}, // first sight: not news
		{rd("BUSY", ""), ""},
		{rd("READY", "idle"), "nudge: rev (w) is READY"},
		{rd("READY", ""), ""},
		{rd("NEEDS_CONFIRMATION", "Allow?"), "nudge: rev (w) is NEEDS_CONFIRMATION: Allow?"},
		{rd("ERROR", "Traceback"), "nudge: rev (w) is ERROR: Traceback"},
		{rt("failed", nil), ""}, // first sight (failed before the daemon started)
		{rt("ready", nil), ""},
		{rt("failed", &one), "nudge: rev (w) failed (exit status 1)"},
		{rt("failed", &one), ""},
		{rt("starting", nil), ""},
		{rt("failed", nil), "nudge: rev (w) failed"},
	} {
		if got := n.message(tt.v); got != tt.want {
			t.Errorf("#%d: got %q, want %q", i, got, tt.want)
		}
	}
}

// A completed task is a notification, not only an event (seed 003: exit status 0 or the
// profile's done marker leave the runtime exited). Before, only failed was.
func TestMessagesTaskDone(t *testing.T) {
	n := &Notifier{readiness: map[string]string{}, status: map[string]string{}, failed: map[string]struct{}{}}
	zero, three := 0, 3
	rt := func(id, status string, exit *int) *view {
		v := &view{Type: "runtime", Workspace: "w"}
		v.Runtime = &runtimeView{id, status, exit}
		return v
	}
	for i, tt := range []struct {
		v    *view
		want string
	}{
		{rt("rt_w.old", "exited", &zero), ""}, // done before the daemon started: not news
		{rt("rt_w.old", "exited", &zero), ""},
		{rt("rt_w.rev", "ready", nil), ""},
		{rt("rt_w.rev", "exited", &zero), "nudge: rev (w) finished its task (exit status 0)"},
		{rt("rt_w.rev", "exited", &zero), ""}, // once
		{rt("rt_w.dev", "ready", nil), ""},
		{rt("rt_w.dev", "exited", &three), "nudge: dev (w) finished its task (its done marker)"},
		{rt("rt_w.qa", "starting", nil), ""},
		{rt("rt_w.qa", "exited", nil), "nudge: qa (w) finished its task (its done marker)"},
		{rt("rt_w.qa", "offline", nil), ""}, // stopped by hand, or crashed: not a completion
	} {
		if got := n.message(tt.v); got != tt.want {
			t.Errorf("#%d: got %q, want %q", i, got, tt.want)
		}
	}
}

// The command gets none of the credentials the daemon's environment holds for the agents
// (a model provider's key, a forge's token), only those named in KeepEnv, and the rest of
// the environment (a webhook URL, PATH). Before, it got them all.
func TestCommandGetsNoCredentials(t *testing.T) {
	out := filepath.Join(t.TempDir(), "env")
	t.Setenv("NOTIFY_OUT", out)
	secrets := map[string]string{"OPENAI_API_KEY": "sk-openai-hook", "ANTHROPIC_AUTH_TOKEN": "anthropic-hook",
		"GITHUB_TOKEN": "ghp_hook", "AWS_SECRET_ACCESS_KEY": "aws-hook", "Gemini_Api_Key": "gemini-hook"}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("NTFY_TOKEN", "ntfy-kept")
	t.Setenv("SLACK_WEBHOOK_URL", "https://hooks.example/kept")
	h := openHub(t)
	n := New(Config{Command: `env > "$NOTIFY_OUT.tmp" && mv "$NOTIFY_OUT.tmp" "$NOTIFY_OUT"`, KeepEnv: []string{"NTFY_TOKEN"}}, h, nil)
	defer n.Close()
	h.Publish(failedTrigger("w1", "t1"))
	waitFor(t, "the command's environment", func() bool { _, err := os.Stat(out); return err == nil })
	env, _ := os.ReadFile(out)
	for k, v := range secrets {
		if bytes.Contains(env, []byte(v)) {
			t.Errorf("%s reached the command", k)
		}
	}
	for _, kv := range []string{"NTFY_TOKEN=ntfy-kept", "SLACK_WEBHOOK_URL=https://hooks.example/kept", "PATH="} {
		if !bytes.Contains(env, []byte(kv)) {
			t.Errorf("the command lacks %s:\n%s", kv, env)
		}
	}
}

// A readiness event the daemon published carries its record (Value): the view is read
// from it, the same as from the detail's JSON.
func TestTypedReadiness(t *testing.T) {
	d := events.Readiness{RuntimeID: "rt_w.rev", Readiness: "NEEDS_CONFIRMATION", Summary: "Allow?"}
	raw, _ := json.Marshal(d)
	var typed, decoded view
	if !typedView(events.Event{Type: "readiness", Workspace: "w", Detail: raw, Value: d}, &typed) ||
		!typedView(events.Event{Type: "readiness", Workspace: "w", Detail: raw}, &decoded) {
		t.Fatal("readiness event not read")
	}
	if typed.Detail != decoded.Detail || typed.Detail.RuntimeID != "rt_w.rev" || typed.Detail.Summary != "Allow?" {
		t.Fatalf("typed %+v, decoded %+v", typed.Detail, decoded.Detail)
	}
}

// A message for a session nobody is attached to starts no display goroutine while the
// list of its clients is fresh: the first message lists them (none), the next ones stop
// there, and one after the list went stale lists them again.
func TestNoDisplayWhileNobodyAttached(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("no tmux")
	}
	sock := fmt.Sprintf("nudge-notify-none-%d", os.Getpid())
	if out, err := exec.Command("tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "agents_w1").CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-L", sock, "kill-server").Run() })
	conn := dialShowing(t, sock)

	h := openHub(t)
	n := New(Config{Session: func(ws string) string { return "agents_" + ws }}, h, fakeConns{"w1": conn})
	defer n.Close()
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	n.clients.now = func() time.Time { return time.Unix(0, clock.Load()) }

	h.Publish(readiness("w1", "rt_w1.rev", "NEEDS_CONFIRMATION", "first"))
	if got := n.Sent(); got != 1 {
		t.Fatalf("sent %d after the first message, want 1", got)
	}
	waitFor(t, "the session's clients listed", func() bool { _, ok := n.clients.fresh(conn, "agents_w1"); return ok })
	h.Publish(readiness("w1", "rt_w1.rev", "ERROR", "second"))
	h.Publish(readiness("w1", "rt_w1.rev", "NEEDS_CONFIRMATION", "third"))
	if got := n.Sent(); got != 1 {
		t.Fatalf("sent %d with nobody attached and the list fresh, want 1", got)
	}
	clock.Add(int64(clientsFresh))
	h.Publish(readiness("w1", "rt_w1.rev", "ERROR", "fourth"))
	if got := n.Sent(); got != 2 {
		t.Fatalf("sent %d once the list went stale, want 2 (listed again)", got)
	}
}

// A runtime whose task completed runs the command with its event (the daemon's typed
// record), as a failure does.
func TestTaskDoneRunsTheCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "events.ndjson")
	t.Setenv("NOTIFY_OUT", out)
	h := openHub(t)
	n := New(Config{Command: `cat >> "$NOTIFY_OUT"`}, h, nil)
	defer n.Close()
	zero := 0
	h.Publish(events.Event{Type: "runtime", Workspace: "w1", Runtime: nudge.Runtime{RuntimeID: "rt_w1.dev", Status: nudge.StatusReady}})
	h.Publish(events.Event{Type: "runtime", Workspace: "w1", Runtime: nudge.Runtime{RuntimeID: "rt_w1.dev", Status: nudge.StatusExited, ExitStatus: &zero}})
	want := append(lastOf(h).JSON(), '\n')
	waitFor(t, "the notification", func() bool { b, _ := os.ReadFile(out); return bytes.Equal(b, want) })
}

// TestPushGetsNotifications: Config.Push (the web view's Web Push) is given what needs a
// person (a dialog, a failed trigger), with its workspace, and nothing else.
func TestPushGetsNotifications(t *testing.T) {
	h := openHub(t)
	var mu sync.Mutex
	var got []string
	n := New(Config{NoDisplay: true, Push: func(ws, msg string) {
		mu.Lock()
		got = append(got, ws+": "+msg)
		mu.Unlock()
	}}, h, nil)
	defer n.Close()
	h.Publish(readiness("w1", "rt_w1.rev", "BUSY", ""))
	h.Publish(readiness("w1", "rt_w1.rev", "NEEDS_CONFIRMATION", "Run rm?"))
	h.Publish(failedTrigger("w1", "t1"))
	mu.Lock()
	defer mu.Unlock()
	want := []string{"w1: nudge: rev (w1) is NEEDS_CONFIRMATION: Run rm?", "w1: nudge: trigger t1 to rev (w1) failed: ACK_TIMEOUT"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}
