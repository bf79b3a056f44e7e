package inject

import (
	"context"
	"errors"
	"sync"
	"testing"

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
