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
	fb := nudge.Trigger{State: nudge.StateSubmitted, Closed: true}
	if r := resultFor(&fb); r != nudge.ResultDelivered {
		t.Fatalf("closed at submitted: %s, want delivered", r)
	}
}

// TestResultAfterOwnFallbackIsDelivered: a trigger whose live path timed out (ACK_TIMEOUT,
// DEFER_TIMEOUT) and which nudge's own fallback then delivered is delivered, the fallback
// named on the receipt, never timeout: seed 000 §9.2 has an orchestrator resume the
// session itself on timeout, and the agent would get the prompt twice (issue 36 item 1).
// Only a prompt that reached no agent is timeout.
func TestResultAfterOwnFallbackIsDelivered(t *testing.T) {
	for i, c := range []struct {
		t    nudge.Trigger
		want nudge.Result
	}{
		{nudge.Trigger{State: nudge.StateAcked, Closed: true, ErrorCode: nudge.DeferTimeout, Fallback: "spawn"}, nudge.ResultDelivered},
		{nudge.Trigger{State: nudge.StateAcked, Closed: true, ErrorCode: nudge.AckTimeout, Fallback: "resume"}, nudge.ResultDelivered},
		{nudge.Trigger{State: nudge.StateSubmitted, Closed: true, ErrorCode: nudge.AckTimeout, Fallback: "resume"}, nudge.ResultDelivered},
		{nudge.Trigger{State: nudge.StateFailed, Closed: true, ErrorCode: nudge.AckTimeout, Fallback: "resume"}, nudge.ResultTimeout},
		{nudge.Trigger{State: nudge.StateFailed, Closed: true, ErrorCode: nudge.DeferTimeout}, nudge.ResultTimeout},
		{nudge.Trigger{State: nudge.StateFailed, Closed: true, ErrorCode: nudge.SpawnFailed, Fallback: "spawn"}, nudge.ResultFailed},
	} {
		if got := resultFor(&c.t); got != c.want {
			t.Errorf("#%d: %s %s after %q: got %s, want %s", i, c.t.State, c.t.ErrorCode, c.t.Fallback, got, c.want)
		}
	}
}
