package inject

import (
	"context"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
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

// TestAcceptWhileDelivering: a trigger that arrives while another delivery is in
// progress is not typed on its request's goroutine and has its first decision (queued)
// at once, so its request does not wait for a lane to type it behind the deliveries in
// progress (under a backlog the accept's p99 was that typing's: benchmarks/README.md).
// With nothing delivering and nothing ahead, the lane decides as before.
func TestAcceptWhileDelivering(t *testing.T) {
	p := newWaitPipeline(t, nil)
	ls := &p.lanes
	newFor := func(id, rt string) *job {
		ls.mu.Lock()
		if ls.m[rt] == nil {
			ls.m[rt] = newLane(rt) // no lane goroutine: nothing decides but enqueue
		}
		ls.mu.Unlock()
		return newJob(nudge.Trigger{TriggerID: id, RuntimeID: rt}, false)
	}
	decided := func(j *job) bool {
		select {
		case <-j.decided:
			return true
		default:
			return false
		}
	}
	idle := newFor("a1", "rt_a")
	p.enqueue(idle)
	if decided(idle) {
		t.Fatal("a1 decided at enqueue with nothing ahead and nothing delivering: its lane decides")
	}
	ls.delivering.Add(1) // another lane is typing, waiting for an echo or confirming Enter
	defer ls.delivering.Add(-1)
	busy := newFor("b1", "rt_b")
	if p.typeInline(busy) {
		t.Fatal("b1 typed on its request's goroutine while another delivery was in progress")
	}
	p.enqueue(busy)
	if !decided(busy) {
		t.Fatal("b1 not decided at enqueue while another delivery was in progress: its request waits for its typing")
	}
	if st := busy.record().State; st != "" && st != nudge.StateQueued {
		t.Fatalf("b1 is %s; want queued", st)
	}
}

// chanAcker is an Acker whose Wait returns once APIAck acked the trigger.
type chanAcker struct {
	fakeAcker
	acked chan struct{}
}

func (a chanAcker) Wait(ctx context.Context, _ string) (string, error) {
	select {
	case <-a.acked:
		return "api", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (a chanAcker) APIAck(string) bool { close(a.acked); return true }

// blockedSender is a Sender whose commands wait until release is closed.
type blockedSender struct{ release chan struct{} }

func (s blockedSender) Do(ctx context.Context, cmd string) (*controlmode.Reply, error) {
	_, err := s.DoAll(ctx, cmd)
	return nil, err
}

func (s blockedSender) DoAll(context.Context, ...string) ([]*controlmode.Reply, error) {
	<-s.release
	return nil, controlmode.ErrClosed
}

// TestAckWhileDelivering: an ack wait's end goes to its job's lane, whose goroutine
// applies it while an attempt of another trigger runs (here one whose tmux never
// answers): Pipeline.Ack finds the trigger acked, not held behind the delivery.
func TestAckWhileDelivering(t *testing.T) {
	acks := chanAcker{acked: make(chan struct{})}
	p := newWaitPipeline(t, acks, nudge.Trigger{TriggerID: "a1", State: nudge.StateSubmitted, RuntimeID: "rt", Attempts: 1})
	l := newLane("rt")
	p.lanes.mu.Lock()
	p.lanes.m["rt"] = l // no lane goroutine: the test plays it
	p.lanes.mu.Unlock()
	stored, err := p.deps.Store.Triggers().GetTrigger("a1")
	if err != nil {
		t.Fatal(err)
	}
	a1 := newJob(stored, false)
	close(a1.created)
	p.mu.Lock()
	p.jobs["a1"] = a1
	p.mu.Unlock()
	p.goAwaitAck(a1)

	s := blockedSender{release: make(chan struct{})}
	b1 := newJob(nudge.Trigger{TriggerID: "b1", RuntimeID: "rt"}, false)
	delivered := make(chan outcome, 1)
	go func() { // the lane's goroutine, delivering b1
		l.turn.Lock()
		defer l.turn.Unlock()
		delivered <- p.attemptServing(l, s, p.newAttempt(l, b1, nudge.Runtime{RuntimeID: "rt", PaneID: "%1"}))
	}()
	got, err := p.Ack(context.Background(), "a1")
	if err != nil || got.State != nudge.StateAcked || !got.Closed {
		t.Errorf("Ack while the lane delivers b1: %s closed=%v, %v; want acked", got.State, got.Closed, err)
	}
	select {
	case o := <-delivered:
		t.Errorf("b1's attempt ended (%v) before its tmux answered", o.kind)
	default:
	}
	close(s.release)
	<-delivered
}
