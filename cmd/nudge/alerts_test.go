package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/nudgehq/nudge/store"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func closedTrigger(i int, result string) store.Trigger {
	return store.Trigger{TriggerID: fmt.Sprintf("t%d", i), RuntimeID: "rt_w.a", Closed: true, Result: result}
}

func TestAlertTimeoutRatio(t *testing.T) {
	clk := &fakeClock{time.Unix(1e9, 0)}
	a := newAlerter(alertConfig{}, clk.now)
	var got []alert
	// 16 delivered, then timeouts: the 5th timeout of the last 20 passes 20%.
	for i := range 16 {
		got = append(got, a.trigger(closedTrigger(i, "delivered"))...)
	}
	for i := 16; i < 20; i++ {
		got = append(got, a.trigger(closedTrigger(i, "timeout"))...)
	}
	if len(got) != 0 {
		t.Fatalf("4/20 timed out (20%%): alerts %+v", got)
	}
	got = a.trigger(closedTrigger(20, "timeout")) // window now 15 delivered + 5 timeouts = 25%
	if len(got) != 1 || got[0].Kind != "timeout_ratio" || got[0].Value != 0.25 {
		t.Fatalf("5/20 timed out: %+v", got)
	}
	// The same trigger seen again does not count twice; within the cooldown no repeat.
	if again := a.trigger(closedTrigger(21, "timeout")); len(again) != 0 {
		t.Fatalf("repeated within cooldown: %+v", again)
	}
	clk.advance(6 * time.Minute)
	if again := a.trigger(closedTrigger(22, "timeout")); len(again) != 1 {
		t.Fatalf("after the cooldown: %+v", again)
	}
}

func TestAlertTimeoutRatioNeedsMinimum(t *testing.T) {
	a := newAlerter(alertConfig{}, (&fakeClock{time.Unix(1e9, 0)}).now)
	for i := range 4 {
		if got := a.trigger(closedTrigger(i, "timeout")); len(got) != 0 {
			t.Fatalf("#%d: alert from too few triggers: %+v", i, got)
		}
	}
	if got := a.trigger(closedTrigger(4, "timeout")); len(got) != 1 {
		t.Fatalf("5 of 5 timed out: %+v", got)
	}
}

func TestAlertFallbackSpike(t *testing.T) {
	clk := &fakeClock{time.Unix(1e9, 0)}
	a := newAlerter(alertConfig{}, clk.now)
	fb := func(i int) []alert {
		return a.trigger(store.Trigger{TriggerID: fmt.Sprintf("f%d", i), RuntimeID: "rt_w.a", Fallback: "resume"})
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
	a := newAlerter(alertConfig{HeartbeatStale: time.Minute}, clk.now)
	rts := []store.Runtime{
		{RuntimeID: "rt_w.hb", Agent: "codex", Status: "ready", LastHeartbeatAt: clk.t},
		{RuntimeID: "rt_w.nohb", Agent: "shell", Status: "ready", CreatedAt: clk.t.Add(-time.Hour)},
		{RuntimeID: "rt_w.off", Agent: "codex", Status: "offline", CreatedAt: clk.t.Add(-time.Hour)},
	}
	expects := func(rt store.Runtime) bool { return rt.Agent == "codex" }
	if got := a.heartbeats(rts, expects); len(got) != 0 {
		t.Fatalf("fresh: %+v", got)
	}
	clk.advance(2 * time.Minute)
	got := a.heartbeats(rts, expects)
	if len(got) != 1 || got[0].Kind != "stale_heartbeat" || got[0].RuntimeID != "rt_w.hb" {
		t.Fatalf("stale: %+v", got)
	}
	if got := a.heartbeats(rts, expects); len(got) != 0 {
		t.Fatalf("repeated within cooldown: %+v", got)
	}
}

// Alerts reach /v1/events subscribers and the log via the daemon's observer.
func TestAlertPublishedOnHub(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	sub := td.d.hub.Subscribe()
	defer td.d.hub.Unsubscribe(sub)
	// Feed the observer's hub consumer five timed-out receipts.
	for i := range 5 {
		td.d.hub.Publish(Event{Type: "trigger", Trigger: store.Trigger{TriggerID: fmt.Sprintf("x%d", i), Closed: true, Result: "timeout"}})
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-sub.C:
			if ev.Type == "alert" {
				return
			}
		case <-deadline:
			t.Fatal("no alert event")
		}
	}
}
