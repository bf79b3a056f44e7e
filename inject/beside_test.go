package inject

import (
	"errors"
	"testing"

	"github.com/nudgehq/nudge"
)

// TestBeside: a person's keys go while the lane is idle and hold its turn meanwhile; they
// are refused (CONFLICT, fn not run) while a delivery holds the turn, and while a
// trigger typed from its request waits for its Enter (the lane's cont).
func TestBeside(t *testing.T) {
	p := newWaitPipeline(t, nil)
	l := newLane("rt") // no goroutine of its own: the test holds its turn and cont
	p.lanes.mu.Lock()
	p.lanes.m["rt"] = l
	p.lanes.mu.Unlock()
	ran := 0
	if err := p.Beside("rt", func() error {
		ran++
		if l.turn.TryLock() {
			t.Error("the lane's turn is free while the keys go")
		}
		return nil
	}); err != nil || ran != 1 {
		t.Fatalf("idle lane: %v, ran %d", err, ran)
	}

	refused := func(what string) {
		t.Helper()
		err := p.Beside("rt", func() error { ran++; return nil })
		var ne *nudge.Error
		if !errors.As(err, &ne) || ne.Code != nudge.Conflict || ran != 1 {
			t.Errorf("%s: %v, ran %d", what, err, ran)
		}
	}
	l.turn.Lock() // a delivery under way
	refused("a delivery holds the turn")
	l.cont = typed{j: &job{}}
	l.turn.Unlock()
	refused("an envelope waits for its Enter")
	l.turn.Lock()
	l.cont = typed{}
	l.turn.Unlock()
}
