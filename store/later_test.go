package store

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

func TestLaterWritesApplyInOrderAndFlush(t *testing.T) {
	var mu sync.Mutex
	var failed []string
	news := newTestNews(t)
	on(news, func(f LaterFailed) {
		mu.Lock()
		failed = append(failed, f.Op)
		mu.Unlock()
	})
	db := openAt(t, filepath.Join(t.TempDir(), "nudge.db"), Options{NoSync: true, Bus: news.b})
	tr, _, err := db.Triggers().CreateTrigger(nudge.Trigger{TriggerID: "t1", State: "queued"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []nudge.TriggerState{"injected", "submitted", "acked"} {
		st := st
		db.Triggers().UpdateTriggerLater(tr.TriggerID, func(t *nudge.Trigger) error { t.State = st; return nil },
			nudge.AuditRecord{Event: "trigger_" + string(st)})
	}
	db.Triggers().UpdateTriggerLater("missing", func(*nudge.Trigger) error { return nil })
	db.Runtimes().PutRuntimeLater(nudge.Runtime{RuntimeID: "rt1", Status: "ready"})
	db.AuditLog().AppendAuditLater(nudge.AuditRecord{Event: "last"})
	db.Flush()
	got, err := db.Triggers().GetTrigger("t1")
	if err != nil || got.State != "acked" {
		t.Fatalf("trigger: %+v %v", got, err)
	}
	if _, err := db.Runtimes().GetRuntime("rt1"); err != nil {
		t.Fatalf("runtime: %v", err)
	}
	recs, _ := db.AuditLog().Audit(AuditFilter{})
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
	if n, err := db.AuditLog().VerifyAudit(); err != nil || n != 4 {
		t.Fatalf("verify: %d %v", n, err)
	}
	news.drain()
	mu.Lock()
	if len(failed) != 1 || failed[0] != "update trigger missing" {
		t.Fatalf("failed ops: %v", failed)
	}
	mu.Unlock()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db.Runtimes().PutRuntimeLater(nudge.Runtime{RuntimeID: "rt2"})
	news.drain()
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
	tr, _, err := db.Triggers().CreateTrigger(nudge.Trigger{TriggerID: "t1", State: "queued"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Triggers().UpdateTriggerLater(tr.TriggerID, func(t *nudge.Trigger) error { t.State = "acked"; return nil })
	db.Runtimes().PutRuntimeLater(nudge.Runtime{RuntimeID: "rt1", Status: "ready"})
	db.Settle()
	if got, err := db.Triggers().GetTrigger("t1"); err != nil || got.State != "acked" {
		t.Fatalf("trigger after Settle: %+v %v", got, err)
	}
	if _, err := db.Runtimes().GetRuntime("rt1"); err != nil {
		t.Fatalf("runtime after Settle: %v", err)
	}
}

// TestCloseJoinsDrain: Close waits for the write-behind goroutine, even while it backs
// off from failing commits; nothing of it runs after Close returns.
func TestCloseJoinsDrain(t *testing.T) {
	news := newTestNews(t)
	on(news, func(LaterFailed) {})
	db, err := Open(filepath.Join(t.TempDir(), "nudge.db"), Options{NoSync: true, Bus: news.b})
	if err != nil {
		t.Fatal(err)
	}
	db.failCommit = func() error { return errors.New("disk full") }
	db.Runtimes().PutRuntimeLater(nudge.Runtime{RuntimeID: "rt1"})
	waitUntil(t, "failing commits", func() bool { return db.Unavailable() != nil })
	db.Close()
	news.drain()
	reported := news.c.Stats().Delivered
	db.later.mu.Lock()
	running := db.later.running
	db.later.mu.Unlock()
	if running {
		t.Fatal("the write-behind goroutine is still running after Close")
	}
	if news.drain(); news.c.Stats().Delivered != reported+1 { // the drain's own event only
		t.Errorf("write-behind reports after Close: %d", news.c.Stats().Delivered-reported-1)
	}
}

// TestPutTriggerLaterWritesTheLastRecordOfABatch: a fan-out's trigger goes through
// injected, submitted and acked within one write-behind batch; only the last record is
// written, every state's audit record is appended in order (filled from its own record:
// a fallback to another runtime shows in its runtime_id), and a put of a trigger that
// does not exist fails alone.
func TestPutTriggerLaterWritesTheLastRecordOfABatch(t *testing.T) {
	var mu sync.Mutex
	var failed []string
	news := newTestNews(t)
	on(news, func(f LaterFailed) {
		mu.Lock()
		failed = append(failed, f.Op)
		mu.Unlock()
	})
	db := openAt(t, filepath.Join(t.TempDir(), "nudge.db"), Options{NoSync: true, Bus: news.b})
	// Hold the writer so that everything below is queued before its next batch.
	hold, held := make(chan struct{}), make(chan struct{})
	go db.bolt.Update(func(*bolt.Tx) error { close(held); <-hold; return nil }) //nolint:errcheck // nothing written
	<-held
	tr := nudge.Trigger{TriggerID: "t1", RuntimeID: "rt1", WorkspaceID: "ws", State: "queued"}
	if _, created, err := db.Triggers().CreateTriggerQuick(tr, &nudge.AuditRecord{Event: "trigger_received"}); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	for i, st := range []nudge.TriggerState{"injected", "submitted", "acked"} {
		tr.State = st
		if i == 2 {
			tr.RuntimeID, tr.Closed = "rt2", true
		}
		db.Triggers().PutTriggerLater(tr, nudge.AuditRecord{Event: "trigger_" + string(st)})
		db.Runtimes().PutRuntimeLater(nudge.Runtime{RuntimeID: "rt1", Status: nudge.Status("s" + string(st))})
	}
	close(hold)
	db.Flush()
	if n := db.triggers.triggerPuts.Load(); n != 1 {
		t.Errorf("%d trigger records written for one trigger in one batch, want 1", n)
	}
	db.Triggers().PutTriggerLater(nudge.Trigger{TriggerID: "missing", State: "acked"}, nudge.AuditRecord{Event: "never"})
	db.AuditLog().AppendAuditLater(nudge.AuditRecord{Event: "last"})
	db.Flush()

	got, err := db.Triggers().GetTrigger("t1")
	if err != nil || got.State != "acked" || !got.Closed || got.RuntimeID != "rt2" {
		t.Fatalf("trigger: %+v %v", got, err)
	}
	if open, _ := db.Triggers().ListTriggers(TriggerFilter{OpenOnly: true}); len(open) != 0 {
		t.Fatalf("closed trigger still in the open index: %+v", open)
	}
	if rt, err := db.Runtimes().GetRuntime("rt1"); err != nil || rt.Status != "sacked" {
		t.Fatalf("runtime: %+v %v", rt, err)
	}
	recs, _ := db.AuditLog().Audit(AuditFilter{})
	var events []string
	for _, r := range recs {
		events = append(events, r.Event+"@"+r.RuntimeID)
	}
	want := []string{"trigger_received@rt1", "trigger_injected@rt1", "trigger_submitted@rt1", "trigger_acked@rt2", "last@"}
	if strings.Join(events, " ") != strings.Join(want, " ") {
		t.Fatalf("audit %v, want %v", events, want)
	}
	if n, err := db.AuditLog().VerifyAudit(); err != nil || n != len(want) {
		t.Fatalf("verify: %d %v", n, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failed) != 1 || failed[0] != "update trigger missing" {
		t.Fatalf("failed ops: %v", failed)
	}
}

// TestLazyWritesRideTheNextCommit: a lazy write is in the store after a Settle behind an
// eager write, after a Flush of its own, and after Close.
func TestLazyWritesRideTheNextCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nudge.db")
	db := openAt(t, path, Options{NoSync: true})
	db.Runtimes().PutRuntimeLazy(nudge.Runtime{RuntimeID: "rt1", Readiness: nudge.Ready})
	db.Runtimes().PutRuntimeLater(nudge.Runtime{RuntimeID: "rt2", Status: "ready"})
	db.Settle()
	for _, id := range []string{"rt1", "rt2"} {
		if _, err := db.Runtimes().GetRuntime(id); err != nil {
			t.Fatalf("%s after Settle: %v", id, err)
		}
	}
	db.Runtimes().PutRuntimeLazy(nudge.Runtime{RuntimeID: "rt1", Readiness: nudge.Busy})
	db.Flush()
	if rt, err := db.Runtimes().GetRuntime("rt1"); err != nil || rt.Readiness != nudge.Busy {
		t.Fatalf("rt1 after Flush: %+v %v", rt, err)
	}
	db.Runtimes().PutRuntimeLazy(nudge.Runtime{RuntimeID: "rt3"})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2 := openAt(t, path, Options{NoSync: true})
	if _, err := db2.Runtimes().GetRuntime("rt3"); err != nil {
		t.Fatalf("a lazy write before Close: %v", err)
	}
}
