package panes

import (
	"testing"

	"github.com/nudgehq/nudge"
)

// TestDeadPaneKeepsItsExitStatus: tmux 3.3a built with libutempter now and then loses the
// SIGCHLD of a pane's process (reap.go), leaving the pane dead with no exit status; a
// clean exit then read as a crash, was restarted and counted toward a crash loop. Each
// program here exits on its own, one at a time (another child of the tmux server exiting
// would reap a lost one by chance), and every one must be recorded as the exit 0 it was.
func TestDeadPaneKeepsItsExitStatus(t *testing.T) {
	e := newEnv(t, nil)
	const runs = 8
	for i := range runs {
		role := string(rune('a' + i))
		rt := e.spawn("ws", role, "sh", "-c", "sleep 0.5; exit 0")
		e.waitFor(role+" to end", func() bool { return e.status(rt.RuntimeID) != nudge.StatusReady })
		got, _ := e.reg.Get(rt.RuntimeID)
		if got.Status != nudge.StatusExited || got.ExitStatus == nil || *got.ExitStatus != 0 || len(got.Failures) != 0 {
			t.Fatalf("run %d: a clean exit recorded as status %s, exit %v, failures %d (reap requests so far: %d)",
				i, got.Status, got.ExitStatus, len(got.Failures), e.reg.Stats().Reaps)
		}
	}
	t.Logf("%d clean exits, %d reap requests", runs, e.reg.Stats().Reaps)
}
