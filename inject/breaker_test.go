package inject

import (
	"testing"
	"time"
)

func TestBreakerStates(t *testing.T) {
	var states []string // the changes the methods reported, in order
	b := newBreakers(2, time.Minute)
	now := time.Unix(1_000_000, 0)
	held := func(id string, at time.Time) bool {
		_, _, h, halfOpen := b.admit("rt", id, at)
		if halfOpen {
			states = append(states, BreakerHalfOpen)
		}
		return h
	}
	fail := func(id string, at time.Time) bool {
		opened, _ := b.fail("rt", id, at)
		if opened {
			states = append(states, BreakerOpen)
		}
		return opened
	}
	if fail("t1", now) || held("t2", now) {
		t.Fatal("one failure opened it")
	}
	if !fail("t2", now) || !held("t3", now.Add(59*time.Second)) {
		t.Fatal("two failures in a row did not open it")
	}
	// The cooldown is over: t3 probes, t4 waits for it.
	if held("t3", now.Add(time.Minute)) || !held("t4", now.Add(time.Minute)) || held("t3", now.Add(time.Minute)) {
		t.Fatal("half-open does not let exactly the probe through")
	}
	// The probe fails: open again for twice the cooldown.
	if !fail("t3", now.Add(70*time.Second)) || !held("t4", now.Add(70*time.Second+119*time.Second)) ||
		held("t4", now.Add(70*time.Second+120*time.Second)) {
		t.Fatal("a failed probe does not double the cooldown")
	}
	// The probe t4 ends without an outcome (say it fell back for another reason): another
	// trigger may probe.
	b.settle("rt", "t4")
	if held("t5", now.Add(200*time.Second)) {
		t.Fatal("a settled probe keeps the breaker half-open for good")
	}
	if b.success("rt") {
		states = append(states, "")
	}
	if st, _ := b.state("rt"); st != "" || held("t6", now.Add(200*time.Second)) {
		t.Fatal("an ack does not close it")
	}
	want := []string{BreakerOpen, BreakerHalfOpen, BreakerOpen, BreakerHalfOpen, ""}
	if len(states) != len(want) {
		t.Fatalf("states %q, want %q", states, want)
	}
	for i := range want {
		if states[i] != want[i] {
			t.Fatalf("states %q, want %q", states, want)
		}
	}
	off := newBreakers(-1, time.Minute)
	for i := 0; i < 10; i++ {
		off.fail("rt", "x", now)
	}
	if _, _, h, _ := off.admit("rt", "y", now); h {
		t.Fatal("a breaker turned off holds")
	}
}
