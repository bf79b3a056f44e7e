package inject

import (
	"testing"
	"time"
)

// waitUntil polls cond with a generous deadline (the machine may be loaded).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSettleWakesOnce: settle asks to be woken for the first output only; the rest of a
// stream moves lastOut, which its timer reads, and the quiet after the stream still ends
// the wait with output seen.
func TestSettleWakesOnce(t *testing.T) {
	l := newLane("rt")
	seq := l.outSeq.Load()
	done := make(chan struct{})
	res := make(chan bool, 1)
	go func() { res <- l.settle(done, time.Now, seq, 20*time.Millisecond, time.Hour) }()
	waitUntil(t, "settle to wait for output", func() bool { return l.waiters.Load() == 1 })
	l.observe(time.Now())
	waitUntil(t, "settle to stop asking for wake-ups", func() bool { return l.waiters.Load() == 0 })
	for range 100 {
		l.observe(time.Now()) // a stream: no waiter to wake
	}
	select {
	case seen := <-res:
		if !seen {
			t.Fatal("settle reported no output")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("settle did not end after the output went quiet")
	}
}

// TestSettleDoneDeregisters: a settle ended by done leaves no waiter behind.
func TestSettleDoneDeregisters(t *testing.T) {
	l := newLane("rt")
	done := make(chan struct{})
	res := make(chan bool, 1)
	go func() { res <- l.settle(done, time.Now, l.outSeq.Load(), time.Hour, time.Hour) }()
	waitUntil(t, "settle to wait", func() bool { return l.waiters.Load() == 1 })
	l.observe(time.Now())
	waitUntil(t, "settle to see the output", func() bool { return l.waiters.Load() == 0 })
	close(done)
	if !<-res {
		t.Fatal("output not reported")
	}
	if n := l.waiters.Load(); n != 0 {
		t.Fatalf("waiters %d after settle returned", n)
	}
}
