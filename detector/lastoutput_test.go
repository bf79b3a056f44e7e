package detector

import (
	"testing"
	"time"
)

// LastOutput is when the pane last printed (the wake room's quiet policy reads it): it
// moves with the pane's output, and is zero for a runtime the Monitor does not watch.
func TestLastOutput(t *testing.T) {
	e := newLiveEnv(t, nil)
	rt := e.spawnShell("quiet")
	if got := e.mon.LastOutput("rt_ws.nobody"); !got.IsZero() {
		t.Fatalf("unwatched runtime: %v", got)
	}
	before := time.Now()
	e.tmux("send-keys", "-t", rt.PaneID, "echo printed", "Enter")
	e.waitFor("output after the keys", func() bool { return e.mon.LastOutput(rt.RuntimeID).After(before) })
}
