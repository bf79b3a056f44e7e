package observe

import (
	"fmt"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func closedTrigger(i int, result string) nudge.Trigger {
	return nudge.Trigger{TriggerID: fmt.Sprintf("t%d", i), RuntimeID: "rt_w.a", Closed: true, Result: nudge.Result(result)}
}

func TestAlertTimeoutRatio(t *testing.T) {
	clk := &fakeClock{time.Unix(1e9, 0)}
	a := NewAlerter(AlertConfig{}, clk.now)
	var got []Alert
	// 16 delivered, then timeouts: the 5th timeout of the last 20 passes 20%.
	for i := range 16 {
		got = append(got, a.Trigger(closedTrigger(i, "delivered"))...)
	}
	for i := 16; i < 20; i++ {
		got = append(got, a.Trigger(closedTrigger(i, "timeout"))...)
	}
	if len(got) != 0 {
		t.Fatalf("4/20 timed out (20%%): alerts %+v", got)
	}
	got = a.Trigger(closedTrigger(20, "timeout")) // window now 15 delivered + 5 timeouts = 25%
	if len(got) != 1 || got[0].Kind != "timeout_ratio" || got[0].Value != 0.25 {
		t.Fatalf("5/20 timed out: %+v", got)
	}
	// The same trigger seen again does not count twice; within the cooldown no repeat.
	if again := a.Trigger(closedTrigger(21, "timeout")); len(again) != 0 {
		t.Fatalf("repeated within cooldown: %+v", again)
	}
	clk.advance(6 * time.Minute)
	if again := a.Trigger(closedTrigger(22, "timeout")); len(again) != 1 {
		t.Fatalf("after the cooldown: %+v", again)
	}
}

func TestAlertTimeoutRatioNeedsMinimum(t *testing.T) {
	a := NewAlerter(AlertConfig{}, (&fakeClock{time.Unix(1e9, 0)}).now)
	for i := range 4 {
		if got := a.Trigger(closedTrigger(i, "timeout")); len(got) != 0 {
			t.Fatalf("#%d: alert from too few triggers: %+v", i, got)
		}
	}
	if got := a.Trigger(closedTrigger(4, "timeout")); len(got) != 1 {
		t.Fatalf("5 of 5 timed out: %+v", got)
	}
}

func TestAlertFallbackSpike(t *testing.T) {
	clk := &fakeClock{time.Unix(1e9, 0)}
	a := NewAlerter(AlertConfig{}, clk.now)
	fb := func(i int) []Alert {
		return a.Trigger(nudge.Trigger{TriggerID: fmt.Sprintf("f%d", i), RuntimeID: "rt_w.a", Fallback: "resume"})
	}
	fb(1)
	clk.advance(3 * time.Minute)
	fb(2)
	clk.advance(3 * time.Minute) // f1 is now 6m old: outside the 5m window
	if got := fb(3); len(got) != 0 {
		t.Fatalf("2 fallbacks in 5m: %+v", got)
	}
	fb(3) // the same trigger again is not a new fallback
	clk.advance(time.Minute)
	if got := fb(4); len(got) != 1 || got[0].Kind != "fallback_spike" {
		t.Fatalf("3 fallbacks in 5m: %+v", got)
	}
}

func TestAlertStaleHeartbeat(t *testing.T) {
	clk := &fakeClock{time.Unix(1e9, 0)}
	a := NewAlerter(AlertConfig{HeartbeatStale: time.Minute}, clk.now)
	rts := []nudge.Runtime{
		{RuntimeID: "rt_w.hb", Agent: "codex", Status: "ready", LastHeartbeatAt: clk.t},
		{RuntimeID: "rt_w.nohb", Agent: "shell", Status: "ready", CreatedAt: clk.t.Add(-time.Hour)},
		{RuntimeID: "rt_w.off", Agent: "codex", Status: "offline", CreatedAt: clk.t.Add(-time.Hour)},
	}
	expects := func(rt nudge.Runtime) bool { return rt.Agent == "codex" }
	if got := a.Heartbeats(rts, expects); len(got) != 0 {
		t.Fatalf("fresh: %+v", got)
	}
	clk.advance(2 * time.Minute)
	got := a.Heartbeats(rts, expects)
	if len(got) != 1 || got[0].Kind != "stale_heartbeat" || got[0].RuntimeID != "rt_w.hb" {
		t.Fatalf("stale: %+v", got)
	}
	if got := a.Heartbeats(rts, expects); len(got) != 0 {
		t.Fatalf("repeated within cooldown: %+v", got)
	}
}

// TestStaleHeartbeatOnlyForBeatingRuntimes: a runtime whose agent never sent a heartbeat
// raises no stale-heartbeat alert, whatever its profile accepts as an ack (before, every
// runtime of every built-in profile raised it two minutes after it started); one that has
// sent one, or whose profile says its agent sends them, does.
func TestStaleHeartbeatOnlyForBeatingRuntimes(t *testing.T) {
	clk := &fakeClock{time.Unix(1e9, 0)}
	a := NewAlerter(AlertConfig{HeartbeatStale: time.Minute}, clk.now)
	sends := map[string]bool{"beats": true}
	rts := []nudge.Runtime{
		{RuntimeID: "rt_w.quiet", Agent: "codex", Status: "ready", CreatedAt: clk.t},
		{RuntimeID: "rt_w.sent", Agent: "codex", Status: "ready", CreatedAt: clk.t, LastHeartbeatAt: clk.t},
		{RuntimeID: "rt_w.profile", Agent: "beats", Status: "ready", CreatedAt: clk.t},
	}
	clk.advance(2 * time.Minute)
	got := a.Heartbeats(rts, func(rt nudge.Runtime) bool { return WatchesHeartbeat(rt, sends[rt.Agent]) })
	stale := map[string]bool{}
	for _, al := range got {
		stale[al.RuntimeID] = true
	}
	if len(got) != 2 || !stale["rt_w.sent"] || !stale["rt_w.profile"] {
		t.Fatalf("stale alerts: %+v (want rt_w.sent and rt_w.profile only)", got)
	}
}
