package panes

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/nudgehq/nudge"
)

// change is one persisted change, published (nudge.RuntimeChanged) after the lock is
// released.
type change struct {
	rt   nudge.Runtime
	prev nudge.Status
}

func (r *records) notify(chs []change) {
	for _, c := range chs {
		nudge.Publish(r.cfg.Bus, nudge.RuntimeChanged{Runtime: c.rt, Prev: c.prev})
	}
}

func cloneRuntime(rt *nudge.Runtime) nudge.Runtime {
	c := *rt
	c.Argv = slices.Clone(rt.Argv)
	c.Failures = slices.Clone(rt.Failures)
	if rt.ExitStatus != nil {
		n := *rt.ExitStatus
		c.ExitStatus = &n
	}
	return c
}

// putLocked makes rt the live copy and queues it for the store (write-behind: the
// registry's memory is the truth, the store follows in order, one fsync for many changes;
// operations that must be durable when they return call db.Flush). mu is held, and
// no fsync happens under it.
func (r *records) putLocked(rt *nudge.Runtime) error {
	old := r.rts[rt.RuntimeID]
	if old != nil && volatileOnly(old, rt) {
		r.db.Runtimes().PutRuntimeLazy(*rt) // readiness is recomputed at start: once a second is enough
	} else {
		r.db.Runtimes().PutRuntimeLater(*rt)
	}
	if old != nil && old.PaneID != rt.PaneID {
		r.panes.Delete(keyOf(old))
		r.markers.forget(keyOf(old))
	}
	if old == nil || old.PaneID != rt.PaneID {
		r.watchMarkerLocked(rt)
		r.paneSeq++
		r.paneAt[rt.RuntimeID] = r.paneSeq
	}
	c := cloneRuntime(rt)
	r.rts[rt.RuntimeID] = &c
	r.indexPane(&c)
	return nil
}

// volatileOnly reports whether next differs from old only in what the detector
// recomputes from the screen (readiness, summary, input line) and the update time.
// Every other field is compared (TestVolatileOnlyComparesEveryOtherField).
func volatileOnly(old, next *nudge.Runtime) bool {
	return old.RuntimeID == next.RuntimeID && old.WorkspaceID == next.WorkspaceID && old.Host == next.Host && old.TmuxSocket == next.TmuxSocket &&
		old.Role == next.Role && old.AgentID == next.AgentID && old.Agent == next.Agent &&
		old.SessionID == next.SessionID && old.Dir == next.Dir && slices.Equal(old.Argv, next.Argv) &&
		old.Managed == next.Managed && old.TmuxSession == next.TmuxSession && old.TmuxWindow == next.TmuxWindow &&
		old.TmuxPane == next.TmuxPane && old.Target == next.Target && old.PaneID == next.PaneID &&
		old.PID == next.PID && old.Status == next.Status && old.OperatorBusy == next.OperatorBusy &&
		old.Paused == next.Paused && equalPtr(old.ExitStatus, next.ExitStatus) &&
		old.LastHeartbeatAt.Equal(next.LastHeartbeatAt) && old.HeartbeatStatus == next.HeartbeatStatus && old.LastCursor == next.LastCursor &&
		old.LastTriggerID == next.LastTriggerID && old.Breaker == next.Breaker &&
		equalTime(old.CooldownUntil, next.CooldownUntil) &&
		slices.EqualFunc(old.Failures, next.Failures, time.Time.Equal) && old.Restarts == next.Restarts &&
		old.CreatedAt.Equal(next.CreatedAt) && old.StatusSince.Equal(next.StatusSince)
}

func equalPtr(a, b *int) bool { return a == b || a != nil && b != nil && *a == *b }

func equalTime(a, b *time.Time) bool { return a == b || a != nil && b != nil && a.Equal(*b) }

func (r *records) indexPane(rt *nudge.Runtime) {
	if k := keyOf(rt); k.n >= 0 {
		r.panes.Store(k, rt.RuntimeID)
	}
}

// transitionLocked validates and applies a status change (plus mutate, if any),
// persists and audits it. mu is held. code is an optional failure code for the audit.
func (r *records) transitionLocked(id string, to nudge.Status, reason string, code nudge.Code,
	mutate func(*nudge.Runtime)) ([]change, error) {
	cur, ok := r.rts[id]
	if !ok {
		return nil, notFound(id)
	}
	from := cur.Status
	next := cloneRuntime(cur)
	if mutate != nil {
		mutate(&next)
	}
	next.Status = cur.Status
	to = pausedTarget(&next, to)
	if err := checkTransition(from, to); err != nil {
		return nil, &wrapped{nudge.NewError(nudge.Conflict, err.Error()), err}
	}
	now := r.cfg.Now()
	next.Status, next.StatusSince, next.UpdatedAt = to, now, now
	if !Live(to) || to == nudge.StatusStarting || to == nudge.StatusFallbackResume || to == nudge.StatusSpawnRecovery {
		// No stale readiness: a dead pane reads nothing, and a new program (or one being
		// relaunched) has shown nothing yet.
		next.Readiness, next.Summary = nudge.Unknown, ""
	}
	if err := r.putLocked(&next); err != nil {
		return nil, err
	}
	r.auditLocked(&next, "runtime_status_changed", reason, code,
		map[string]any{"from": from, "to": to, "exit_status": next.ExitStatus})
	return []change{{rt: cloneRuntime(&next), prev: from}}, nil
}

// auditLocked appends one audit record; a failure is logged, not returned (the state
// change it describes is already persisted).
func (r *records) auditLocked(rt *nudge.Runtime, event, reason string, code nudge.Code, detail any) {
	rec := nudge.AuditRecord{Time: r.cfg.Now(), Event: event, RuntimeID: rt.RuntimeID,
		Workspace: rt.WorkspaceID, Reason: reason, Code: code}
	if detail != nil {
		rec.Detail, _ = json.Marshal(detail)
	}
	r.db.AuditLog().AppendAuditLater(rec)
}

// wrapped is a *nudge.Error that also unwraps to its cause (e.g. *TransitionError).
type wrapped struct {
	ne    *nudge.Error
	cause error
}

func (w *wrapped) Error() string   { return w.ne.Error() }
func (w *wrapped) Unwrap() []error { return []error{w.ne, w.cause} }

// pausedTarget turns "back to ready" into paused for a runtime whose triggers are paused
// (`nudge pause`): the state machine shows it.
func pausedTarget(cur *nudge.Runtime, to nudge.Status) nudge.Status {
	if to == nudge.StatusReady && cur.Paused && CanTransition(cur.Status, nudge.StatusPaused) {
		return nudge.StatusPaused
	}
	return to
}

func stoppedKey(id string) string { return "panes.stopped." + id }
