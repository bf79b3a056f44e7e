package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/api"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/inject"
)

// rawCat spawns a runtime whose program writes every byte it reads from its tty (raw mode,
// echo on so nudge sees the echo) to a file, and returns the file's path.
func rawCat(t *testing.T, td *testDaemon, ws, role string) (runtimeView, string) {
	t.Helper()
	file := filepath.Join(td.cfg.Panes.Roots[0], role+".bytes")
	rt := td.spawnShell(ws, role, "sh", "-c", "stty raw; exec cat > "+file)
	// The file appears when cat starts, after stty: a prompt typed before would meet a
	// cooked tty.
	readUntil(t, file, func(string) bool { _, err := os.Stat(file); return err == nil })
	return rt, file
}

// expectTyped is what nudge types for a prompt: the sanitized prompt in its envelope,
// then Enter.
func expectTyped(id, thread, reason, prompt string) string {
	text, err := inject.Sanitize(prompt, 64<<10)
	if err != nil {
		panic(err)
	}
	if reason == "" {
		reason = "trigger"
	}
	return inject.Envelope{ID: id, Thread: thread, Reason: reason, AckHint: true}.Wrap(text) + "\r"
}

func readUntil(t *testing.T, file string, ok func(string) bool) string {
	t.Helper()
	var got string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(file)
		if got = string(b); ok(got) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
	return got
}

func TestTriggerHostilePromptsArriveByteExact(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	_, file := rawCat(t, td, "w1", "rev")
	prompts := []string{
		"trailing semicolon;",
		`quotes ' " and it's`,
		"$HOME and ~ and $(touch pwned) and `id`",
		"#{pane_id} #(echo hi) {braces} %if 1",
		"see @path/file.go please",
		strings.Repeat("five kilobytes of text. ", 5*1024/24),
		"CJK 日本語のテキスト and emoji 🚀🎉",
		"embedded ESC \x1b[31mred\x1b[0m and NUL \x00 bytes",
		"two\nlines",
		`backslash \ and \n literal`,
	}
	var want strings.Builder
	for i, p := range prompts {
		id := fmt.Sprintf("hostile-%d", i)
		tr, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "w1", "agent": "rev", "prompt": p})
		if err != nil {
			t.Fatalf("#%d: trigger: %v", i, err)
		}
		if tr.TriggerID != id {
			t.Fatalf("#%d: got id %q", i, tr.TriggerID)
		}
		got := td.waitTrigger(id, closed)
		if got.State != "acked" || got.Result != "delivered" || got.AckSignal != "submitted" {
			t.Fatalf("#%d: receipt %+v", i, got)
		}
		want.WriteString(expectTyped(id, "", "", p))
		if got := readUntil(t, file, func(s string) bool { return len(s) >= want.Len() }); got != want.String() {
			t.Fatalf("#%d: pane read\n%q\nwant\n%q", i, got, want.String())
		}
	}
	if _, err := os.Stat(filepath.Join(td.cfg.Panes.Roots[0], "pwned")); err == nil {
		t.Fatal("a payload ran a shell command")
	}
	if n := strings.Count(td.tmux("list-windows", "-a"), "\n"); n != 1 {
		t.Fatalf("payloads created windows: %d", n)
	}
}

func TestTriggerRepeatedIDDeliveredOnce(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	_, file := rawCat(t, td, "w1", "rev")
	var wg sync.WaitGroup
	results := make([]nudge.Trigger, 50)
	errs := make([]error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = td.trigger(map[string]any{"trigger_id": "same", "workspace": "w1", "agent": "rev", "prompt": "only once"})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		if results[i].TriggerID != "same" {
			t.Fatalf("#%d: %+v", i, results[i])
		}
	}
	td.waitTrigger("same", closed)
	// A repeat after it finished returns the record and types nothing.
	again, err := td.trigger(map[string]any{"trigger_id": "same", "workspace": "w1", "agent": "rev", "prompt": "only once"})
	if err != nil || again.State != "acked" {
		t.Fatalf("repeat after close: %+v %v", again, err)
	}
	// The same id with another request is refused, naming what differs, and types nothing.
	rawCat(t, td, "w1", "second")
	_, err = td.trigger(map[string]any{"trigger_id": "same", "workspace": "w1", "agent": "second", "prompt": "to another agent"})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.ErrorCode != nudge.IdempotencyConflict || !strings.Contains(ae.Message, "agent, prompt") {
		t.Fatalf("same id, other agent and prompt: %v (want IDEMPOTENCY_CONFLICT naming agent, prompt)", err)
	}
	time.Sleep(300 * time.Millisecond)
	b, _ := os.ReadFile(file)
	if n := strings.Count(string(b), "id=same "); n != 1 {
		t.Fatalf("delivered %d times:\n%q", n, b)
	}
}

func TestTriggerUnknownRuntimeNeedsFallback(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	tr, err := td.trigger(map[string]any{"trigger_id": "nobody", "workspace": "w9", "agent": "ghost", "prompt": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.State != "failed" || tr.ErrorCode != "UNMANAGED_RUNTIME" || tr.Result != "failed" {
		t.Fatalf("got %+v", tr)
	}
}

func TestTriggerBadInput(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rawCat(t, td, "w1", "rev")
	cases := []struct {
		body any
		code string
	}{
		{map[string]any{"workspace": "w1", "agent": "rev", "prompt": ""}, "PAYLOAD_REJECTED"},
		{map[string]any{"workspace": "w1", "agent": "rev", "prompt": strings.Repeat("x", 65<<10)}, "PAYLOAD_REJECTED"},
		{map[string]any{"workspace": "w1", "agent": "rev", "prompt": "ACK_TRIGGER:x"}, "PAYLOAD_REJECTED"},
		{map[string]any{"workspace": "w1", "agent": "rev", "prompt": "hi", "trigger_id": "bad id;"}, "BAD_REQUEST"},
		{map[string]any{"workspace": "w1", "agent": "rev", "prompt": "hi", "bogus": 1}, "BAD_REQUEST"},
		{map[string]any{"workspace": "w1", "agent": "rev", "prompt": "hi", "force_override": true}, "BAD_REQUEST"},
		{map[string]any{"agent": "rev", "prompt": "hi"}, "BAD_REQUEST"},
		{strings.Repeat("y", 2<<20), "PAYLOAD_REJECTED"},
	}
	for i, c := range cases {
		_, err := td.trigger2(c.body)
		ae, ok := err.(*api.Error)
		if !ok || string(ae.ErrorCode) != c.code {
			t.Errorf("#%d: got %v, want %s", i, err, c.code)
		}
	}
}

// trigger2 posts any body (a string is sent as a JSON string, which is malformed here).
func (td *testDaemon) trigger2(body any) (nudge.Trigger, error) {
	var t nudge.Trigger
	err := td.c.do(t0(), "POST", "/v1/triggers", body, &t)
	return t, err
}

// TestTriggerSurvivesDaemonRestart: a trigger held (paused runtime) when the daemon stops is
// delivered, whole, by the next daemon on the same state.
func TestTriggerSurvivesDaemonRestart(t *testing.T) {
	cfg := newTestConfig(t)
	td := startDaemon(t, cfg)
	rt, file := rawCat(t, td, "w1", "rev")
	if err := td.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/pause", nil, nil); err != nil {
		t.Fatal(err)
	}
	if tr, err := td.trigger(map[string]any{"trigger_id": "held", "workspace": "w1", "agent": "rev", "prompt": "after the restart"}); err != nil || tr.State != "deferred" {
		t.Fatalf("held trigger: %+v %v", tr, err)
	}
	td.stop()
	td2 := startDaemon(t, cfg)
	td2.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "paused" }) // its triggers are paused
	if err := td2.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/resume", nil, nil); err != nil {
		t.Fatal(err)
	}
	got := td2.waitTrigger("held", closed)
	want := expectTyped("held", "", "", "after the restart")
	if b := readUntil(t, file, func(s string) bool { return len(s) >= len(want) }); got.State != "acked" || b != want {
		t.Fatalf("receipt %+v\npane read %q\nwant %q", got, b, want)
	}
}
