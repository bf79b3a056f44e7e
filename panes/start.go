package panes

import (
	"context"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
)

// Starting → ready (seed 001 §9): a profile with ReadyOn "readiness" stays starting until
// the detector reads READY on its screen (Update moves it); one with ReadyOn "alive" is
// ready once its pane is alive. A runtime still starting after its start timeout is
// failed with SPAWN_FAILED, its screen (redacted) kept in the audit as evidence. Its pane
// is left as it is, for a human to look at; `nudge restart` starts it again.

// startOverdue is a runtime whose start timed out, as seen by a reconcile pass.
type startOverdue struct {
	id, pane string
	at       server
	since    time.Time
	timeout  time.Duration
}

// overdueLocked reports rt if it is starting past its timeout. The records' lock is held.
func (rc *reconciler) overdueLocked(rt *nudge.Runtime, now time.Time) (startOverdue, bool) {
	if rt.Status != nudge.StatusStarting || !rt.Managed {
		return startOverdue{}, false // an unmanaged pane's start is not nudge's to judge
	}
	d := rc.startTimeout(rt)
	if now.Sub(rt.StatusSince) < d {
		return startOverdue{}, false
	}
	return startOverdue{id: rt.RuntimeID, pane: rt.PaneID, at: rc.conns.placeLocked(rt.WorkspaceID).server, since: rt.StatusSince, timeout: d}, true
}

// failStarts fails each overdue runtime that is still in the same start, with its screen.
func (rc *reconciler) failStarts(ctx context.Context, due []startOverdue) {
	for _, o := range due {
		screen := rc.evidence(ctx, o.at, o.pane)
		rc.recs.mu.Lock()
		rt := rc.recs.rts[o.id]
		var chs []change
		if rt != nil && rc.recs.busy[o.id] == "" && rt.Status == nudge.StatusStarting && rt.StatusSince.Equal(o.since) {
			why := "start timeout: not READY within " + o.timeout.String()
			var err error
			chs, err = rc.recs.transitionLocked(o.id, nudge.StatusFailed, why, nudge.SpawnFailed, nil)
			rc.recs.logErr("start timeout", o.id, err)
			if err == nil {
				rc.recs.auditLocked(rc.recs.rts[o.id], "runtime_start_timeout", why, nudge.SpawnFailed,
					map[string]any{"pane_id": o.pane, "timeout_ms": o.timeout.Milliseconds(), "screen": screen})
			}
		}
		rc.recs.mu.Unlock()
		rc.recs.notify(chs)
	}
}

// evidence captures a pane's screen, redacted, for the audit ("" if it cannot).
func (rc *reconciler) evidence(ctx context.Context, at server, pane string) string {
	if pane == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := rc.tmux.run(ctx, at, "capture-pane", "-p", "-J", "-t", pane)
	if err != nil {
		return ""
	}
	out = strings.TrimRight(out, "\n ")
	out = nudge.Redact(nudge.StripANSI(out))
	const max = 8 << 10
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

// startTimeout is the profile's start timeout, else Config.StartTimeout.
func (rc *reconciler) startTimeout(rt *nudge.Runtime) time.Duration {
	if d := rc.cfg.Profiles[rt.Agent].StartTimeout; d > 0 {
		return d
	}
	return rc.cfg.StartTimeout
}

// startDeadline is when a starting runtime fails its start; zero if it is not starting.
// The trigger pipeline holds a trigger for a starting runtime until then.
func (rc *reconciler) startDeadline(id string) time.Time {
	rc.recs.mu.Lock()
	defer rc.recs.mu.Unlock()
	rt := rc.recs.rts[id]
	if rt == nil || rt.Status != nudge.StatusStarting {
		return time.Time{}
	}
	return rt.StatusSince.Add(rc.startTimeout(rt))
}
