package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// TestStopKeepsRuntimeStopped: a stopped runtime stays stopped. A trigger to it fails
// with RUNTIME_STOPPED, saying how to start it again, and relaunches nothing (it was
// respawned by the fallback chain: `acked delivered PANE_DEAD … runtime is offline`);
// `nudge restart` starts it, and triggers go again. `nudge stop` takes several ids and
// --workspace, and says what it is doing while it waits.
func TestStopKeepsRuntimeStopped(t *testing.T) {
	t.Parallel()
	cfg := newTestConfig(t)
	cfg.Panes.StopTimeout, cfg.Panes.KillGrace = 300*time.Millisecond, 300*time.Millisecond
	td := startDaemon(t, cfg)
	a := td.spawnShell("stp", "a")
	td.spawnShell("stp", "b")
	td.spawnShell("stp", "c")

	_, stderr, code := td.runCLI("stop", a.RuntimeID, "--reason", "done for today")
	if code != 0 || !strings.Contains(stderr, "stopping "+a.RuntimeID) {
		t.Fatalf("stop: %d %q", code, stderr)
	}
	out, stderr, code := td.runCLI("trigger", "--workspace", "stp", "--agent", "a", "--id", "after-stop", "--wait", "-o", "json", "echo hello")
	if code != 1 || !strings.Contains(out, "RUNTIME_STOPPED") || !strings.Contains(stderr, "nudge restart "+a.RuntimeID) {
		t.Fatalf("trigger to a stopped runtime: exit %d\n%s%s", code, out, stderr)
	}
	td.sweeps(2)
	if got := td.get(a.RuntimeID); got.Status != nudge.StatusOffline {
		t.Fatalf("the stopped runtime was started again: %+v", got.Runtime)
	}
	for _, r := range td.audit("after-stop") {
		if strings.HasPrefix(r.Event, "fallback") && r.Event != "fallback_required" {
			t.Errorf("a fallback ran for a stopped runtime: %s %s", r.Event, r.Reason)
		}
	}

	if _, stderr, code := td.runCLI("restart", a.RuntimeID, "--reason", "back to work"); code != 0 {
		t.Fatalf("restart: %d %s", code, stderr)
	}
	td.waitRuntime(a.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	if got := td.sendWait("stp", "a", "after-restart", "echo again"); got.State != nudge.StateAcked {
		t.Fatalf("after restart: %+v", got)
	}

	// Several at once: by id, and a whole workspace.
	_, stderr, code = td.runCLI("stop", "--workspace", "stp", "--reason", "all of them")
	if code != 0 {
		t.Fatalf("stop --workspace: %d %s", code, stderr)
	}
	for _, id := range []string{"rt_stp.a", "rt_stp.b", "rt_stp.c"} {
		if got := td.get(id); got.Status != nudge.StatusOffline {
			t.Errorf("%s after stop --workspace: %s", id, got.Status)
		}
		if !strings.Contains(stderr, "stopping "+id) || !strings.Contains(stderr, "stopped "+id) {
			t.Errorf("stop --workspace says nothing of %s:\n%s", id, stderr)
		}
	}
	if _, stderr, code := td.runCLI("stop", "rt_stp.a", "rt_stp.b", "--reason", "again"); code != 0 {
		t.Errorf("stop of two stopped runtimes: %d %s", code, stderr)
	}
}
