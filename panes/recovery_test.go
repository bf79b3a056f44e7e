package panes

import (
	"testing"
	"time"
)

// TestRecoveryBackoffAndDeadline: each crash of a recovery doubles the wait before the
// restart, up to the cap; a recovery still crashing past the deadline is over (failed);
// a runtime that ran the deadline without a crash starts a new recovery.
func TestRecoveryBackoffAndDeadline(t *testing.T) {
	var k recoveryClock
	t0 := time.Unix(1e9, 0)
	base, max, deadline := time.Second, 5*time.Second, time.Hour
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	now := t0
	for i, w := range want {
		wait, expired := k.crashed("rt", now, base, max, deadline)
		if expired || wait != w {
			t.Fatalf("crash %d: wait %v expired %v, want %v", i+1, wait, expired, w)
		}
		if d := k.delay("rt", base); d != w {
			t.Fatalf("crash %d: delay %v, want %v", i+1, d, w)
		}
		now = now.Add(10 * time.Minute)
	}
	if _, expired := k.crashed("rt", t0.Add(deadline), base, max, deadline); !expired {
		t.Fatal("a recovery still crashing at its deadline was not over")
	}
	// Ran a whole deadline without a crash: a new recovery, from the base wait.
	if wait, expired := k.crashed("rt", t0.Add(3*deadline), base, max, deadline); expired || wait != base {
		t.Fatalf("after a quiet deadline: wait %v expired %v", wait, expired)
	}
	k.forget("rt")
	if d := k.delay("rt", base); d != base {
		t.Fatalf("after forget: delay %v", d)
	}
}
