package inject

import (
	"time"
	"unicode/utf8"

	"github.com/nudgehq/nudge"
)

// MaxReply bounds the reply a receipt keeps (64 KiB); a longer one is cut on a rune
// boundary and marked reply_truncated.
const MaxReply = 64 << 10

// Reply is the agent's answer in the turn that took a trigger's prompt, as its own record
// shows it (ack.Records).
type Reply struct {
	Text      string
	Truncated bool      // cut before it reached the pipeline
	EndedAt   time.Time // the turn's end
	Evidence  string    // file:line of the turn's end in the record
}

// Reply records the reply of trigger id's turn on its receipt (reply, reply_truncated,
// turn_ended_at), redacted and bounded, with a reply_received audit record citing the
// evidence; waiters for the reply and the event stream hear of it. The first reply of a
// trigger is kept: a later one (the record read again) changes nothing. It never moves
// the receipt's state. It reports whether this reply was recorded.
func (p *Pipeline) Reply(id string, r Reply) (bool, error) {
	text, cut := clipReply(nudge.Redact(r.Text))
	at := r.EndedAt
	if at.IsZero() {
		at = p.cfg.Now()
	}
	set := func(t *nudge.Trigger) bool {
		if t.TurnEndedAt != nil {
			return false
		}
		t.Reply, t.ReplyTruncated, t.TurnEndedAt = text, cut || r.Truncated, tp(at)
		return true
	}
	detail := map[string]any{"evidence": r.Evidence, "bytes": len(text), "truncated": cut || r.Truncated}
	if j := p.inflight(id); j != nil {
		fresh := false
		rec := j.update(p.cfg.Now(), func(t *nudge.Trigger) { fresh = set(t) })
		if fresh {
			p.persist(j, p.auditDetail("reply_received", rec, "the agent's turn ended", detail))
		}
		return fresh, nil
	}
	p.deps.Store.Flush() // the trigger's last write-behind record first
	fresh := false
	t, err := p.deps.Store.UpdateTrigger(id, func(t *nudge.Trigger) error {
		fresh = set(t)
		if fresh {
			t.UpdatedAt = p.cfg.Now()
		}
		return nil
	})
	if err != nil || !fresh {
		return false, err
	}
	if _, err := p.deps.Store.AppendAudit(p.auditDetail("reply_received", t, "the agent's turn ended", detail)); err != nil {
		p.log.Warn("audit reply", "trigger_id", id, "err", err)
	}
	p.changed(t)
	return true, nil
}

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
