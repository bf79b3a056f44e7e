package inject

import (
	"testing"

	"github.com/nudgehq/nudge"
)

// TestResultMeansAcknowledged: delivered is the result of an acknowledged trigger only
// (seed 000 §9.1); a submitted one is pending, and the result moves only forward, so a
// retry after an ack timeout never turns a receipt back, nor counts it in two outcomes.
func TestResultMeansAcknowledged(t *testing.T) {
	tr := nudge.Trigger{State: nudge.StateQueued}
	steps := []struct {
		name string
		fn   func(*nudge.Trigger)
		want nudge.Result
	}{
		{"injected", func(t *nudge.Trigger) { t.State = nudge.StateInjected }, nudge.ResultPending},
		{"submitted", func(t *nudge.Trigger) { t.State = nudge.StateSubmitted }, nudge.ResultPending},
		{"retried after an ack timeout", func(t *nudge.Trigger) { t.State, t.ErrorCode = nudge.StateQueued, nudge.AckTimeout }, nudge.ResultPending},
		{"deferred on the retry", func(t *nudge.Trigger) { t.State = nudge.StateDeferred }, nudge.ResultDeferred},
		{"submitted again", func(t *nudge.Trigger) { t.State, t.ErrorCode = nudge.StateSubmitted, "" }, nudge.ResultPending},
		{"acked", func(t *nudge.Trigger) { t.State, t.Closed = nudge.StateAcked, true }, nudge.ResultDelivered},
		{"a late timeout changes nothing", func(t *nudge.Trigger) { t.State, t.ErrorCode = nudge.StateFailed, nudge.AckTimeout }, nudge.ResultDelivered},
	}
	for _, s := range steps {
		s.fn(&tr)
		if tr.Result = resultFor(&tr); tr.Result != s.want {
			t.Fatalf("%s: result %s, want %s", s.name, tr.Result, s.want)
		}
	}
	fb := nudge.Trigger{State: nudge.StateSubmitted, Closed: true, ErrorCode: nudge.AckTimeout}
	if r := resultFor(&fb); r != nudge.ResultTimeout {
		t.Fatalf("a fallback launch after an ack timeout: %s, want timeout", r)
	}
	fb = nudge.Trigger{State: nudge.StateSubmitted, Closed: true}
	if r := resultFor(&fb); r != nudge.ResultDelivered {
		t.Fatalf("closed at submitted: %s, want delivered", r)
	}
}
