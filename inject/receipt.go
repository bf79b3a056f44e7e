package inject

import (
	"encoding/json"
	"fmt"

	"github.com/nudgehq/nudge"
)

// The receipt's writes on the way, as the lane applies an attempt's steps: the typing
// (injected) and the prompt leaving the composer (submitted). The closing writes are in
// finish.go, the holds' in ledger.go (markDeferred).

// markInjected records that j's prompt was given to the agent by backend (typed into the
// pane: nudge.BackendTmux); newAttempt counts a typing (false: only the Enter of an
// attempt already recorded is still to come).
func (p *Pipeline) markInjected(j *job, d attemptDetail, newAttempt bool, backend string) {
	now := p.cfg.Now()
	rec := j.update(now, func(t *nudge.Trigger) {
		t.State = nudge.StateInjected
		t.InjectedAt = tp(now)
		if newAttempt {
			t.Attempts++
		}
		t.DeliveryBackend = backend
		j.settleCause(t, "")
		t.DeferredUntil = nil
		t.Result = resultFor(t)
	})
	j.maybeTyped = true
	j.markDecided()
	p.transition(rec.RuntimeID, nudge.StatusTriggering, "trigger "+rec.TriggerID)
	p.lastTrigger(rec)
	p.persist(j, p.auditDetail("trigger_sent", rec, "", d))
}

// markSubmitted records that j's prompt left the composer (or the agent has it), with
// note, and then closes it acked (ackNow: submitted is its ack) or waits for its ack.
func (p *Pipeline) markSubmitted(j *job, d attemptDetail, note string, ackNow bool) {
	now := p.cfg.Now()
	rec := j.update(now, func(t *nudge.Trigger) {
		t.State = nudge.StateSubmitted
		t.SubmittedAt = tp(now)
		j.settleCause(t, note)
		t.Result = resultFor(t)
	})
	p.persist(j, p.auditDetail("trigger_submitted", rec, note, d))
	if ackNow {
		p.finishAcked(j, "submitted")
		return
	}
	p.transition(rec.RuntimeID, nudge.StatusAwaitingAck, "trigger "+rec.TriggerID)
	p.goAwaitAck(j)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(fmt.Sprintf("%q", err.Error()))
	}
	return b
}

// settleCause clears a live delivery's hold or retry code once the prompt moves on, and
// sets the receipt's message to note. A fallback's live delivery (into the runtime the
// fallback started or redirected to) puts back the code and message that sent the prompt
// there instead, with note added, so the receipt still says why. Called inside j.update.
func (j *job) settleCause(t *nudge.Trigger, note string) {
	if t.Fallback == "" || j.cause.code == "" {
		t.ErrorCode, t.Message = "", note
		return
	}
	t.ErrorCode, t.Message = j.cause.code, j.cause.why
	if note != "" {
		t.Message += "; " + note
	}
}
