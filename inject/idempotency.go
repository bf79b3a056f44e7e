package inject

import (
	"strings"

	"github.com/nudgehq/nudge"
)

// repeated answers a request whose trigger_id is already known. The same request gets the
// first one's record (idempotent: never delivered twice); a different request under the
// same id is refused with IDEMPOTENCY_CONFLICT naming the fields that differ, so a caller
// that reused an id by mistake learns it instead of reading another trigger's receipt as
// its own. text is req's prompt as sanitized, which is what the record keeps.
func repeated(t nudge.Trigger, req Request, text string) (Submitted, error) {
	if diff := requestDiff(t, req, text); len(diff) > 0 {
		return Submitted{}, nudge.NewError(nudge.IdempotencyConflict,
			"trigger_id "+req.TriggerID+" was already used by a different request (differs in "+
				strings.Join(diff, ", ")+"): send it again with the same fields, or pick a new trigger_id")
	}
	return Submitted{Trigger: t}, nil
}

// requestDiff names the request fields in which req differs from the record t was made
// from. Fields the daemon fills in (the caller, times, state) are not compared.
func requestDiff(t nudge.Trigger, req Request, text string) []string {
	var diff []string
	add := func(differs bool, name string) {
		if differs {
			diff = append(diff, name)
		}
	}
	add(t.WorkspaceID != req.Workspace, "workspace")
	add(t.Agent != req.Agent, "agent")
	add(t.ThreadID != req.ThreadID, "thread_id")
	add(t.Prompt != text, "prompt")
	add(t.ForceOverride != req.ForceOverride, "force_override")
	add(t.Reason != req.Reason, "reason")
	add(t.AckTimeoutMS != req.AckTimeoutMS, "ack_timeout_ms")
	return diff
}
