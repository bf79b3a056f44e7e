package panes

import (
	"context"
	"strings"
	"testing"

	"github.com/nudgehq/nudge"
)

// TestRestartFailedIsAnEvent: a restart tmux refuses ends the runtime failed with seed 001
// §13's structured event runtime_restart_failed in the audit log (issue 36 item 8), not
// only a status change a dashboard would have to read the reason of.
func TestRestartFailedIsAnEvent(t *testing.T) {
	e := newEnv(t, nil)
	rt := e.spawn("ws", "a", "sh", "-c", "exec sleep 600")
	// tmux refuses every new window from now on (a command alias shadows new-window):
	// the restart cannot place its new pane.
	if out, err := e.tmux("set", "-s", "command-alias[250]", "new-window=show-options -g nudge-refuses-new-window"); err != nil {
		t.Fatalf("alias: %v %s", err, out)
	}
	if _, err := e.reg.Restart(context.Background(), rt.RuntimeID, "by hand"); err == nil {
		t.Fatal("restart succeeded with tmux refusing new windows")
	}
	if s := e.status(rt.RuntimeID); s != nudge.StatusFailed {
		t.Fatalf("status %s after a failed restart, want failed", s)
	}
	recs := e.audit(rt.RuntimeID, "runtime_restart_failed")
	if len(recs) != 1 || recs[0].Code != nudge.SpawnFailed || !strings.HasPrefix(recs[0].Reason, "by hand: ") {
		t.Fatalf("runtime_restart_failed records: %+v", recs)
	}
}
