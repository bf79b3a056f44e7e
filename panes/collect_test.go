package panes

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// Seed 002: a window opened by hand in a workspace's session appears, unmanaged until it
// is registered (before: nothing listed it).
func TestHandOpenedWindowListedUnmanaged(t *testing.T) {
	e := newEnv(t, nil)
	e.spawn("ws", "a", "cat")
	if _, err := e.tmux("new-window", "-d", "-t", "=agents_ws:", "-n", "hand\x1bmade", "cat"); err != nil {
		// tmux 3.7 refuses a name with a control byte ("invalid window name").
		if out, err := e.tmux("new-window", "-d", "-t", "=agents_ws:", "-n", "handmade", "cat"); err != nil {
			t.Fatalf("new-window: %v %s", err, out)
		}
	}
	var s Stray
	e.waitFor("the hand-opened window listed, running its program", func() bool {
		u := e.reg.Unmanaged()
		if len(u) == 1 {
			s = u[0]
		}
		return len(u) == 1 && s.Command == "cat" // its shell may show first while it starts cat
	})
	// The name's control byte never comes through as one: nudge writes "?" for it, and some
	// tmux releases escape it themselves ("\033").
	name := s.TmuxWindow
	if s.WorkspaceID != "ws" || strings.ContainsRune(name, 0x1b) || !strings.HasPrefix(name, "hand") || !strings.HasSuffix(name, "made") ||
		!strings.HasPrefix(s.PaneID, "%") ||
		s.Target != "agents_ws:1.0" || s.SeenAt.IsZero() {
		t.Errorf("stray: %+v", s)
	}
	if _, err := e.reg.Register(context.Background(), RegisterRequest{Workspace: "ws", Role: "handmade", Agent: "shell", Target: s.PaneID}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("registered: no longer unmanaged", func() bool { return len(e.reg.Unmanaged()) == 0 })
}

// Seed 002 (the daemon drops a PTY whose window disappears): a worker window a human
// closes is recreated once; closed again within the grace it is dropped, not recreated
// again and again (before: recreated every time, until a crash loop failed it).
func TestWindowClosedTwiceDropped(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.CrashLoopFailures = 10 })
	e.spawn("ws", "a", "cat")
	b := e.spawn("ws", "b", "cat")
	if out, err := e.tmux("kill-window", "-t", b.PaneID); err != nil {
		t.Fatalf("kill-window: %v %s", err, out)
	}
	var again nudge.Runtime
	e.waitFor("b recreated", func() bool {
		again, _ = e.reg.Get(b.RuntimeID)
		return again.Status == nudge.StatusReady && again.PaneID != b.PaneID && len(e.windows("ws")) == 2
	})
	if out, err := e.tmux("kill-window", "-t", again.PaneID); err != nil {
		t.Fatalf("kill-window: %v %s", err, out)
	}
	e.waitFor("b dropped", func() bool { _, ok := e.reg.Get(b.RuntimeID); return !ok })
	sweeps := e.reg.Stats().Sweeps
	e.waitFor("more sweeps", func() bool { return e.reg.Stats().Sweeps >= sweeps+3 })
	if w := e.windows("ws"); len(w) != 1 || w[0] != "a" {
		t.Errorf("windows after b was dropped: %q", w)
	}
	recs := e.audit(b.RuntimeID, "runtime_deregistered")
	if len(recs) != 1 || !strings.Contains(recs[0].Reason, "closed again") {
		t.Errorf("deregistered audit: %+v", recs)
	}
}

// Offline, failed and exited runtimes are collected after the retention the operator
// sets; a live one is kept (before: kept forever, the fleet listing its whole history).
func TestRetentionCollectsEnded(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Retention = 300 * time.Millisecond })
	live := e.spawn("ws", "live", "cat")
	done, err := e.reg.Spawn(context.Background(), SpawnRequest{Workspace: "ws", Role: "done", Agent: "shell",
		Argv: []string{"sh", "-c", "exit 0"}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor("done exited", func() bool { _, ok := e.sawStatus(done.RuntimeID, nudge.StatusExited); return ok })
	e.waitFor("done collected", func() bool { _, ok := e.reg.Get(done.RuntimeID); return !ok })
	recs := e.audit(done.RuntimeID, "runtime_deregistered")
	if len(recs) != 1 || !strings.Contains(recs[0].Reason, "collected: exited") {
		t.Errorf("deregistered audit: %+v", recs)
	}
	e.waitFor("its dead window cleaned", func() bool { w := e.windows("ws"); return len(w) == 1 && w[0] == "live" })
	time.Sleep(400 * time.Millisecond) // past the retention: a live runtime stays
	if got, ok := e.reg.Get(live.RuntimeID); !ok || got.Status != nudge.StatusReady {
		t.Errorf("live runtime collected: %+v %v", got, ok)
	}
	if rt, err := e.db.Runtimes().GetRuntime(done.RuntimeID); err != nil || rt.Status != nudge.StatusDeregistered {
		t.Errorf("the collected runtime's record: %+v %v", rt, err)
	}
}
