package inject

import (
	"errors"
	"unicode/utf8"

	"github.com/nudgehq/nudge"
)

// MaxReply bounds the reply a receipt keeps (64 KiB); a longer one is cut on a rune
// boundary and marked reply_truncated.
const MaxReply = 64 << 10

// Reply records the reply of trigger r.TriggerID's turn, read from r.RuntimeID's
// record (ack.Tracker publishes it), on its receipt (reply, reply_truncated, turn_ended_at), redacted and bounded, with a
// reply_received audit record citing the evidence; waiters for the reply and the event
// stream hear of it (its nudge.TriggerChanged carries r). The first reply of a trigger is kept: a later one (the record read
// again) changes nothing and writes nothing. It never moves the receipt's state. It
// reports whether this reply was recorded. It does not wait for a disk write (it runs on
// a record reader's goroutine). The wait for the prompt's intake (Intake) is over: the
// turn that took it ended.
//
// A record is written by its agent: only a trigger handed to runtimeID (typed or given to
// it, or launched there by a fallback) takes a reply from its record. Another runtime's
// trigger, of this workspace or another, or one of its own still queued, is left as it
// is (false, nil): an agent that writes another trigger's envelope
// into its record neither sets that trigger's reply nor learns whether the id exists.
func (p *Pipeline) Reply(r nudge.ReplyRead) (bool, error) {
	runtimeID, id := r.RuntimeID, r.TriggerID
	if in, ok := p.deps.Gates.(Intake); ok {
		in.Settled(runtimeID, id) // the turn that took it ended: its intake is over
	}
	text, cut := clipReply(nudge.Redact(r.Text))
	at := r.EndedAt
	if at.IsZero() {
		at = p.cfg.Now()
	}
	set := func(t *nudge.Trigger) bool {
		if t.TurnEndedAt != nil || !HandedTo(*t, runtimeID) {
			return false
		}
		t.Reply, t.ReplyTruncated, t.TurnEndedAt = text, cut || r.Truncated, tp(at)
		t.UpdatedAt = p.cfg.Now()
		return true
	}
	detail := map[string]any{"evidence": r.Evidence, "bytes": len(text), "truncated": cut || r.Truncated}
	if j := p.inflight(id); j != nil {
		j.mu.Lock()
		fresh := set(&j.t)
		rec := j.t
		j.mu.Unlock()
		if fresh {
			p.persistReply(j, &r, p.auditDetail("reply_received", rec, "the agent's turn ended", detail))
			// The job may be forgotten (done) before this write is in the store, and a
			// waiter woken in between reads the older store copy: wake it again once the
			// write is in (with the next batch, not a commit of its own).
			p.goOwned(func() {
				p.deps.Store.Settle()
				p.waiters.notify(id)
			})
		}
		return fresh, nil
	}
	p.deps.Store.Flush() // the trigger's last write-behind record first
	t, err := p.deps.Store.Triggers().GetTrigger(id)
	if err != nil || t.TurnEndedAt != nil || !HandedTo(t, runtimeID) {
		return false, err
	}
	// The record and its audit in one commit; none at all for a reply already kept.
	t, err = p.deps.Store.Triggers().UpdateTrigger(id, func(t *nudge.Trigger) error {
		if !set(t) {
			return errReplied
		}
		return nil
	}, p.auditDetail("reply_received", t, "the agent's turn ended", detail))
	switch {
	case errors.Is(err, errReplied):
		return false, nil
	case err != nil:
		return false, err
	}
	p.changedReply(t, &r)
	return true, nil
}

// HandedTo reports whether t's prompt was handed to runtimeID: t was sent to it (or a
// fallback launched it there), and it was typed or given (injected or later; a trigger
// that failed after its typing counts). What runtimeID's agent writes (its record, its
// marker) may speak of t only then.
func HandedTo(t nudge.Trigger, runtimeID string) bool {
	if runtimeID == "" || (t.RuntimeID != runtimeID && t.FallbackRuntimeID != runtimeID) {
		return false
	}
	switch t.State {
	case nudge.StateInjected, nudge.StateSubmitted, nudge.StateAcked:
		return true
	}
	return t.InjectedAt != nil || t.SubmittedAt != nil
}

// errReplied: the receipt already has its reply.
var errReplied = errors.New("reply already recorded")

// clipReply cuts s to MaxReply bytes on a rune boundary and says whether it cut.
func clipReply(s string) (string, bool) {
	if len(s) <= MaxReply {
		return s, false
	}
	i := MaxReply
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], true
}
