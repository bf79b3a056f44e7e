package inject

import (
	"context"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
)

// Every place a trigger can wait has an end (docs/orchestrators.md, "Holds"):
//
//	hold                         code                      deadline
//	human at the pane            OPERATOR_BUSY             MaxDefer after it began (collision clock); then the
//	                                                       collision event and held for them MaxHold more,
//	                                                       then failed DEFER_TIMEOUT: no fallback (collision.go)
//	pane in copy mode            OPERATOR_BUSY             the same, on the pane-check clock
//	orchestrator sync pending    ORCHESTRATOR_SYNC         the sync trigger taken or closed, else MaxHold:
//	                                                       the hold lifts (synchold.go)
//	envelope left unentered      INPUT_LINE_BUSY           MaxDefer (pane-check clock)
//	agent busy, no input queue   AGENT_BUSY                MaxHold (hold clock)
//	confirmation dialog          AGENT_NEEDS_CONFIRMATION  MaxHold (hold clock)
//	screen not understood        AGENT_UNKNOWN             MaxHold (hold clock)
//	runtime paused               RUNTIME_PAUSED            MaxHold (hold clock)
//	circuit breaker open         RUNTIME_COOLDOWN          the cooldown's end, within MaxHold
//	thread rate limit            TRIGGER_RATE_LIMITED      the window's next free slot
//	another trigger's fallback   FALLBACK_IN_PROGRESS      that fallback's end (rechecked every 250ms)
//	runtime starting             RUNTIME_STARTING          its start timeout (then failed: the fallback chain)
//	runtime being relaunched     FALLBACK_IN_PROGRESS      MaxHold (hold clock; fallback_resume, spawn_recovery)
//	control connection down      (state unchanged)         MaxDefer, then TARGET_NOT_FOUND
//	remote host unreachable      HOST_UNREACHABLE          MaxDefer, then HOST_UNREACHABLE (injected: unchanged)
//	ack wait                     (submitted)               ack timeout x retries, then ACK_TIMEOUT
//	retry of a prompt taken      AGENT_BUSY                MaxHold (next: unshown; the agent took it
//	  but not drawn since                                  and drew nothing yet), then ACK_TIMEOUT
//
// An expired hold ends in DEFER_TIMEOUT and the fallback chain (failed, with the
// evidence, when there is none; failed for a paused runtime). A forced trigger passes every hold but the loop guard
// and a runtime still starting or being relaunched.

// agentHold reports whether code is held on the hold clock (MaxHold).
func agentHold(code nudge.Code) bool {
	switch code {
	case nudge.AgentBusy, nudge.AgentNeedsConfirmation, nudge.AgentUnknown, nudge.RuntimePaused, nudge.RuntimeCooldown,
		nudge.FallbackInProgress:
		return true
	}
	return false
}

// evidenceLines is how many of the pane's last non-blank lines a failure quotes.
const evidenceLines = 8

// evidence returns the pane's last screen lines, redacted, for the receipt of a hold that
// expired ("" if the pane cannot be read). It runs only at the end of a hold: one capture
// through the control connection, no fork.
func (p *Pipeline) evidence(rt nudge.Runtime) string {
	conn, err := p.deps.Conn(rt.WorkspaceID)
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(p.ctx, 2*time.Second)
	defer cancel()
	r, err := conn.Do(ctx, "capture-pane -p -J -t "+quote(paneTarget(rt)))
	if err != nil || r == nil {
		return ""
	}
	var keep []string
	for i := len(r.Lines) - 1; i >= 0 && len(keep) < evidenceLines; i-- {
		if l := strings.TrimRight(r.Lines[i], " "); strings.TrimSpace(l) != "" {
			keep = append(keep, l)
		}
	}
	if len(keep) == 0 {
		return ""
	}
	for i, k := 0, len(keep)-1; i < k; i, k = i+1, k-1 {
		keep[i], keep[k] = keep[k], keep[i]
	}
	s := nudge.Redact(strings.Join(keep, "\n"))
	if len(s) > 1024 {
		s = s[len(s)-1024:]
	}
	return "; last screen lines:\n" + s
}
