package inject

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// syncAcker is an Acker whose runtime's record holds the prompt, but whose reader has
// not read it yet: only a SyncRecord finds it (then the trigger is acked by the record).
type syncAcker struct {
	fakeAcker
	mu     sync.Mutex
	synced []string // runtimes whose record was read on demand
}

func (a *syncAcker) SyncRecord(_ context.Context, runtimeID string) {
	a.mu.Lock()
	a.synced = append(a.synced, runtimeID)
	a.mu.Unlock()
}

func (a *syncAcker) Wait(context.Context, string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.synced) > 0 {
		return signalRecord, nil
	}
	return "", errors.New("no ack")
}

// TestAckTimeoutReadsTheRecord: at the ack timeout, before a retry is scheduled, the
// runtime's record is read to its end; a prompt found there is acked by it and neither
// retried nor handed to the fallback.
func TestAckTimeoutReadsTheRecord(t *testing.T) {
	acks := &syncAcker{fakeAcker: fakeAcker{apiAck: func(string) bool { return false }}}
	p := newWaitPipeline(t, acks, nudge.Trigger{TriggerID: "t1", State: nudge.StateSubmitted, RuntimeID: "rt", Attempts: 1})
	stored, err := p.deps.Store.Triggers().GetTrigger("t1")
	if err != nil {
		t.Fatal(err)
	}
	j := newJob(stored, false)
	close(j.created)
	p.mu.Lock()
	p.jobs["t1"] = j
	p.mu.Unlock()
	p.ackTimedOut(j)(nil)
	got := j.record()
	if got.State != nudge.StateAcked || got.AckSignal != signalRecord || got.Attempts != 1 || got.NextAttemptAt != nil || got.Fallback != "" {
		t.Fatalf("after the ack timeout: %s signal=%q attempts=%d next=%v fallback=%q; want acked by the record, not retried",
			got.State, got.AckSignal, got.Attempts, got.NextAttemptAt, got.Fallback)
	}
	if len(acks.synced) != 1 || acks.synced[0] != "rt" {
		t.Fatalf("records read: %v, want [rt]", acks.synced)
	}
}

// intakeGates are Gates that follow the intake (Intake): they log the calls.
type intakeGates struct {
	Gates
	mu    sync.Mutex
	calls []string
}

func (g *intakeGates) log(s string)            { g.mu.Lock(); g.calls = append(g.calls, s); g.mu.Unlock() }
func (g *intakeGates) Submitted(rt, id string) { g.log("submitted " + rt + " " + id) }
func (g *intakeGates) Settled(rt, id string)   { g.log("settled " + rt + " " + id) }
func (g *intakeGates) Intaking(nudge.Runtime) (string, time.Time, bool) {
	return "", time.Time{}, false
}

// TestRecordAckKeepsIntake: a trigger acked by the agent's record does not end its intake
// (the agent may still be taking it in: Gemini CLI writes the user line seconds before
// its model call); the end of the turn that took it, in the record (Reply), does.
func TestRecordAckKeepsIntake(t *testing.T) {
	acks := &syncAcker{fakeAcker: fakeAcker{apiAck: func(string) bool { return false }}}
	p := newWaitPipeline(t, acks, nudge.Trigger{TriggerID: "t1", State: nudge.StateSubmitted, RuntimeID: "rt", Attempts: 1})
	g := &intakeGates{}
	p.deps.Gates = g
	stored, err := p.deps.Store.Triggers().GetTrigger("t1")
	if err != nil {
		t.Fatal(err)
	}
	j := newJob(stored, false)
	close(j.created)
	p.mu.Lock()
	p.jobs["t1"] = j
	p.mu.Unlock()
	p.finishAcked(j, signalRecord)
	g.mu.Lock()
	got := strings.Join(g.calls, "; ")
	g.mu.Unlock()
	if got != "" {
		t.Fatalf("intake calls at the record ack: %q, want none", got)
	}
	if _, err := p.Reply(nudge.ReplyRead{RuntimeID: "rt", TriggerID: "t1", Text: "done"}); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	got = strings.Join(g.calls, "; ")
	g.mu.Unlock()
	if got != "settled rt t1" {
		t.Fatalf("intake calls after the turn's end: %q, want it settled", got)
	}
}
