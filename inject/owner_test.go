package inject

import (
	"testing"
	"time"
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
