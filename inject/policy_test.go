package inject

import (
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	c := DefaultConfig()
	cases := []struct {
		attempts int
		wait     time.Duration
		retry    bool
	}{
		{1, 2 * time.Second, true},
		{2, 4 * time.Second, true},
		{3, 0, false},
	}
	for i, tc := range cases {
		wait, retry := c.retryAfter(tc.attempts)
		if wait != tc.wait || retry != tc.retry {
			t.Errorf("#%d: attempts %d: got %s %v, want %s %v", i, tc.attempts, wait, retry, tc.wait, tc.retry)
		}
	}
	c.AckRetries, c.Backoff = 4, []time.Duration{time.Second}
	if wait, retry := c.retryAfter(4); wait != time.Second || !retry {
		t.Errorf("last backoff repeats: got %s %v", wait, retry)
	}
}

func TestRateLimiterSlidingWindow(t *testing.T) {
	r := newRateLimiter(10, time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10 {
		now := t0.Add(time.Duration(i) * time.Second)
		if ok, _ := r.check("k", now); !ok {
			t.Fatalf("#%d: refused under the limit", i)
		}
		r.take("k", now)
	}
	ok, until := r.check("k", t0.Add(30*time.Second))
	if ok || !until.Equal(t0.Add(time.Minute)) {
		t.Fatalf("11th: got %v until %s, want refused until %s", ok, until, t0.Add(time.Minute))
	}
	if ok, _ := r.check("other", t0.Add(30*time.Second)); !ok {
		t.Fatal("keys must not share a budget")
	}
	if ok, _ := r.check("k", t0.Add(time.Minute)); !ok {
		t.Fatal("the first slot must free after the window")
	}
}

func TestLoopGuard(t *testing.T) {
	g := newLoopGuard(20, 3)
	for i := range 2 {
		if tripped, _ := g.turn("t", "same finding"); tripped {
			t.Fatalf("#%d: tripped early", i)
		}
	}
	if tripped, why := g.turn("t", "same finding"); !tripped || why == "" {
		t.Fatal("third identical prompt must trip the guard")
	}
	if b, _ := g.blocked("t"); !b {
		t.Fatal("thread not blocked")
	}
	g.progress("t")
	if b, _ := g.blocked("t"); b {
		t.Fatal("progress must unblock")
	}
	for i := range 19 {
		if tripped, _ := g.turn("t", string(rune('a'+i))); tripped {
			t.Fatalf("turn %d tripped early", i+1)
		}
	}
	if tripped, _ := g.turn("t", "last"); !tripped {
		t.Fatal("20th turn without progress must trip the guard")
	}
}
