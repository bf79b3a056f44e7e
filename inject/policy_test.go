package inject

import (
	"fmt"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
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
		wait, retry := retryAfter(tc.attempts, c.AckRetries, c.Backoff)
		if wait != tc.wait || retry != tc.retry {
			t.Errorf("#%d: attempts %d: got %s %v, want %s %v", i, tc.attempts, wait, retry, tc.wait, tc.retry)
		}
	}
	c.AckRetries, c.Backoff = 4, []time.Duration{time.Second}
	if wait, retry := retryAfter(4, c.AckRetries, c.Backoff); wait != time.Second || !retry {
		t.Errorf("last backoff repeats: got %s %v", wait, retry)
	}
}

func TestRateLimiterSlidingWindow(t *testing.T) {
	r := newRateLimiter(store.GateRate, 10, time.Minute)
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

// oneRuntime is a Runtimes holding rt_w1.rev, whose agent_id is reviewer.
type oneRuntime struct{ noRuntimes }

func (oneRuntime) Lookup(ws, name string) (nudge.Runtime, bool) {
	if ws == "w1" && (name == "rev" || name == "reviewer") {
		return nudge.Runtime{RuntimeID: "rt_w1.rev", WorkspaceID: "w1", Role: "rev", AgentID: "reviewer"}, true
	}
	return nudge.Runtime{}, false
}

func gateLanes(rateLimit, runtimeRate int) *Pipeline {
	return &Pipeline{deps: Deps{Runtimes: oneRuntime{}}, gate: gateState{
		rate:  newRateLimiter(store.GateRate, rateLimit, time.Minute),
		perRT: newRateLimiter(store.GateRuntimeRate, runtimeRate, time.Minute),
		loops: newLoopGuard(20, 3)}}
}

// TestRateCheckPerRuntime: twelve thread ids, and the role and the agent_id of one
// runtime, share its budget; the thread's own budget still holds within it.
func TestRateCheckPerRuntime(t *testing.T) {
	ls := gateLanes(10, 10)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 12 {
		tr := nudge.Trigger{WorkspaceID: "w1", RuntimeID: "rt_w1.rev", Agent: []string{"rev", "reviewer"}[i%2], ThreadID: fmt.Sprint("th", i)}
		now := t0.Add(time.Duration(i) * time.Second)
		ok, until := ls.rateCheck(tr, now)
		if i < 10 && !ok {
			t.Fatalf("#%d: refused within the runtime's budget", i+1)
		}
		if i >= 10 && (ok || !until.Equal(t0.Add(time.Minute))) {
			t.Fatalf("#%d: got %v until %s, want refused until %s", i+1, ok, until, t0.Add(time.Minute))
		}
		if ok {
			ls.gate.rate.take(threadKey(tr), now)
			ls.gate.perRT.take(runtimeKey(tr), now)
		}
	}
	ls = gateLanes(2, 10)
	tr := nudge.Trigger{WorkspaceID: "w1", RuntimeID: "rt_w1.rev", Agent: "rev", ThreadID: "a"}
	for range 2 {
		ls.gate.rate.take(threadKey(tr), t0)
		ls.gate.perRT.take(runtimeKey(tr), t0)
	}
	if ok, _ := ls.rateCheck(nudge.Trigger{WorkspaceID: "w1", RuntimeID: "rt_w1.rev", Agent: "reviewer", ThreadID: "a"}, t0); ok {
		t.Fatal("thread a by the agent_id: past the thread's budget of 2")
	}
	if ok, _ := ls.rateCheck(nudge.Trigger{WorkspaceID: "w1", RuntimeID: "rt_w1.rev", Agent: "rev", ThreadID: "b"}, t0); !ok {
		t.Fatal("thread b: refused within its own and the runtime's budget")
	}
}

// TestGatesLoadUnderRuntime: gates a daemon stored under the agent_id (before the keys
// named the runtime) load under the runtime's key: a block stays a block, a rate window
// stays spent.
func TestGatesLoadUnderRuntime(t *testing.T) {
	ls := gateLanes(2, 10)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gates := []store.Gate{
		{Kind: store.GateLoop, Key: "w1/reviewer\x00th", Turns: 3, Same: 3, Blocked: "the same prompt"},
		{Kind: store.GateLoop, Key: "w1/rev\x00th", Turns: 1, Same: 1},
		{Kind: store.GateLoop, Key: "w9/gone\x00th", Turns: 1, Same: 1},
		{Kind: store.GateRate, Key: "w1/reviewer\x00th", Hits: []time.Time{now.Add(-time.Second)}},
		{Kind: store.GateRate, Key: "w1/rev\x00th", Hits: []time.Time{now.Add(-2 * time.Second)}},
	}
	ls.restoreGates(gates, now)
	if b, _ := ls.gate.loops.blocked("w1/rev\x00th"); !b {
		t.Error("the block stored under the agent_id did not hold for the runtime")
	}
	if keys := ls.gate.loops.keysOf("th"); fmt.Sprint(keys) != fmt.Sprint([]string{"w1/rev\x00th", "w9/gone\x00th"}) {
		t.Errorf("loop keys: %q", keys)
	}
	tr := nudge.Trigger{WorkspaceID: "w1", RuntimeID: "rt_w1.rev", Agent: "rev", ThreadID: "th"}
	if ok, _ := ls.rateCheck(tr, now); ok {
		t.Error("the thread's window, spent under both names, let one more through")
	}
}
