package store

import (
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nudgehq/nudge"
)

func TestLaterWritesApplyInOrderAndFlush(t *testing.T) {
	var mu sync.Mutex
	var failed []string
	db := openAt(t, filepath.Join(t.TempDir(), "nudge.db"), Options{NoSync: true, OnLaterError: func(op string, err error) {
		mu.Lock()
		failed = append(failed, op)
		mu.Unlock()
	}})
	tr, _, err := db.CreateTrigger(nudge.Trigger{TriggerID: "t1", State: "queued"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []nudge.TriggerState{"injected", "submitted", "acked"} {
		st := st
		db.UpdateTriggerLater(tr.TriggerID, func(t *nudge.Trigger) error { t.State = st; return nil },
			nudge.AuditRecord{Event: "trigger_" + string(st)})
	}
	db.UpdateTriggerLater("missing", func(*nudge.Trigger) error { return nil })
	db.PutRuntimeLater(nudge.Runtime{RuntimeID: "rt1", Status: "ready"})
	db.AppendAuditLater(nudge.AuditRecord{Event: "last"})
	db.Flush()
	got, err := db.GetTrigger("t1")
	if err != nil || got.State != "acked" {
		t.Fatalf("trigger: %+v %v", got, err)
	}
	if _, err := db.GetRuntime("rt1"); err != nil {
		t.Fatalf("runtime: %v", err)
	}
	recs, _ := db.Audit(AuditFilter{})
	var events []string
	for _, r := range recs {
		events = append(events, r.Event)
	}
	want := []string{"trigger_injected", "trigger_submitted", "trigger_acked", "last"}
	if len(events) != len(want) {
		t.Fatalf("audit %v, want %v", events, want)
	}
	for i := range want {
		if events[i] != want[i] {
			t.Fatalf("audit %v, want %v", events, want)
		}
	}
	if n, err := db.VerifyAudit(); err != nil || n != 4 {
		t.Fatalf("verify: %d %v", n, err)
	}
	mu.Lock()
	if len(failed) != 1 || failed[0] != "update trigger missing" {
		t.Fatalf("failed ops: %v", failed)
	}
	mu.Unlock()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db.PutRuntimeLater(nudge.Runtime{RuntimeID: "rt2"})
	mu.Lock()
	if len(failed) != 2 {
		t.Fatalf("a write after Close was not refused: %v", failed)
	}
	mu.Unlock()
}

// TestSettleWaitsForQueuedWrites: Settle returns once the writes queued before it are in
// the store (it rides the writer's next batch instead of forcing one).
func TestSettleWaitsForQueuedWrites(t *testing.T) {
	db := openAt(t, filepath.Join(t.TempDir(), "nudge.db"), Options{NoSync: true})
	db.Settle() // nothing queued yet: returns at once
	tr, _, err := db.CreateTrigger(nudge.Trigger{TriggerID: "t1", State: "queued"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.UpdateTriggerLater(tr.TriggerID, func(t *nudge.Trigger) error { t.State = "acked"; return nil })
	db.PutRuntimeLater(nudge.Runtime{RuntimeID: "rt1", Status: "ready"})
	db.Settle()
	if got, err := db.GetTrigger("t1"); err != nil || got.State != "acked" {
		t.Fatalf("trigger after Settle: %+v %v", got, err)
	}
	if _, err := db.GetRuntime("rt1"); err != nil {
		t.Fatalf("runtime after Settle: %v", err)
	}
}

// TestCloseJoinsDrain: Close waits for the write-behind goroutine, even while it backs
// off from failing commits; nothing of it runs after Close returns.
func TestCloseJoinsDrain(t *testing.T) {
	var closed atomic.Bool
	db, err := Open(filepath.Join(t.TempDir(), "nudge.db"), Options{NoSync: true, OnLaterError: func(op string, err error) {
		if closed.Load() {
			t.Errorf("write-behind report after Close: %s: %v", op, err)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	db.failCommit = func() error { return errors.New("disk full") }
	db.PutRuntimeLater(nudge.Runtime{RuntimeID: "rt1"})
	waitUntil(t, "failing commits", func() bool { return db.Unavailable() != nil })
	db.Close()
	closed.Store(true)
	db.later.mu.Lock()
	running := db.later.running
	db.later.mu.Unlock()
	if running {
		t.Fatal("the write-behind goroutine is still running after Close")
	}
}
