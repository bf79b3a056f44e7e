package inject

import (
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// returns reports whether fn returns within a generous deadline (a broken Close hangs).
func returns(fn func()) bool {
	ch := make(chan struct{})
	go func() { fn(); close(ch) }()
	select {
	case <-ch:
		return true
	case <-time.After(30 * time.Second):
		return false
	}
}

// TestSchedulerClose: the scheduler's goroutine is its own, stopped and joined by Close
// while the pipeline stays open (before, only closing the pipeline stopped it).
func TestSchedulerClose(t *testing.T) {
	p := newWaitPipeline(t, nil)
	s := NewScheduler(p, SchedulerConfig{})
	if !returns(func() { s.Close() }) {
		t.Fatal("Close did not return with the pipeline open")
	}
	if !returns(func() { s.Close() }) {
		t.Fatal("a second Close did not return")
	}
	if p.ctx.Err() != nil {
		t.Error("closing the scheduler closed the pipeline")
	}
}

// TestSubmitAsync: the goroutine of a trigger nudge sends itself is the pipeline's: done
// gets Submit's result, and a closed pipeline takes no more.
func TestSubmitAsync(t *testing.T) {
	p := newWaitPipeline(t, nil)
	res := make(chan error, 1)
	req := Request{TriggerID: "sync_1", Workspace: "ws", Agent: "orchestrator", Prompt: "look", Caller: "nudge"}
	if !p.SubmitAsync(req, func(_ Submitted, err error) { res <- err }) {
		t.Fatal("SubmitAsync on an open pipeline reported false")
	}
	select {
	case err := <-res:
		if err != nil {
			t.Fatalf("Submit: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("done was not called")
	}
	got, err := p.Get("sync_1")
	if err != nil || got.Caller != "nudge" {
		t.Fatalf("Get: %+v, %v", got, err)
	}
	if !returns(func() { p.Close() }) {
		t.Fatal("Close did not return")
	}
	if p.SubmitAsync(req, func(Submitted, error) { t.Error("done called after Close") }) {
		t.Error("SubmitAsync on a closed pipeline reported true")
	}
}

// TestScheduleGapSurvivesRestart: a scheduled prompt that went out a minute before the
// daemon restarted still holds the next round back for MinGap (seed 004), counted from
// the time the store kept; before, a restarted scheduler fired at once.
func TestScheduleGapSurvivesRestart(t *testing.T) {
	p := newWaitPipeline(t, nil)
	now := time.Now()
	sc := nudge.Schedule{ScheduleID: "sch_gap", WorkspaceID: "ws", Agent: "a", Prompt: "health check",
		Every: 2 * time.Minute, NextAt: now.Add(-time.Second), LastAt: now.Add(-time.Minute), CreatedAt: now.Add(-time.Hour)}
	if err := p.deps.Store.Schedules().PutSchedule(sc); err != nil {
		t.Fatal(err)
	}
	s := NewScheduler(p, SchedulerConfig{MinGap: 5 * time.Minute})
	defer s.Close()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		recs, err := p.deps.Store.AuditLog().Audit(store.AuditFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Event == "schedule_skipped" {
				if !strings.Contains(r.Reason, "rate limited") {
					t.Fatalf("skipped for another reason: %q", r.Reason)
				}
				return
			}
			if r.Event == "trigger_received" {
				t.Fatalf("a scheduled prompt went out within the gap after a restart: %+v", r)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the due schedule was neither skipped nor fired")
}
