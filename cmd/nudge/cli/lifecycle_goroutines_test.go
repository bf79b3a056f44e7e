package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// roomFrame is a stack frame in one of the daemon's rooms, or of its bus (package nudge).
var roomFrame = regexp.MustCompile(`github\.com/nudgehq/nudge(/(controlmode|panes|detector|inject|inject/native|ack|ack/record|store|cmd/nudge/(server|auth|events|observe|notify|dialogs|approvals|statusfiles|hub)))?\.`)

// goroutines returns the stacks of the running goroutines by id.
func goroutines() map[string]string {
	buf := make([]byte, 8<<20)
	out := map[string]string{}
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		id, _, _ := strings.Cut(strings.TrimPrefix(g, "goroutine "), " ")
		out[id] = g
	}
	return out
}

// Every goroutine a daemon starts (its rooms', with a runtime, a trigger, an event
// stream and the token renewal running) has ended once Close returns: each has an owner
// that joins it.
func TestDaemonCloseJoinsItsGoroutines(t *testing.T) {
	before := goroutines()
	cfg := newTestConfig(t)
	// A program whose profile names a record: its reader (and the shared file watcher) run.
	cfg.ProfileDir = t.TempDir()
	os.WriteFile(filepath.Join(cfg.ProfileDir, "rec.json"), []byte(`{"name": "rec", "launch": ["cat"], "pack": "shell", "record": "claude"}`), 0o644)
	td := startDaemon(t, cfg)
	td.spawnShell("gr", "sh")
	var rec runtimeView
	if err := td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: "gr", Role: "rec", Agent: "rec", Dir: cfg.Panes.Roots[0]}, &rec); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rec.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	if _, err := td.trigger(map[string]any{"trigger_id": "gr1", "workspace": "gr", "agent": "sh", "prompt": "echo joined"}); err != nil {
		t.Fatal(err)
	}
	td.waitTrigger("gr1", closed)
	td.stop()
	var left []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left = left[:0]
		for id, g := range goroutines() {
			if _, old := before[id]; !old && roomFrame.MatchString(g) {
				left = append(left, g)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		t.Fatalf("%d goroutine(s) of the daemon outlived Close:\n\n%s", len(left), strings.Join(left, "\n\n"))
	}
}
