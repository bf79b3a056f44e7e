package detector

import (
	"time"

	"github.com/nudgehq/nudge"
)

// reporter persists what the pane goroutines and the gates learn about a pane (readiness
// and summary, operator_busy, the input line) through the Registry, and publishes it on
// the Bus (nudge.ReadinessChanged, HumanDone, OperatorQuiet). It has no state of
// its own: what was last persisted is the pane's (paneState.opBusy, input), and the pane's
// persistMu serialises its operator_busy decisions with their persistence. It runs on
// the caller's goroutine.
type reporter struct{ cfg *MonitorConfig }

// publish persists a changed readiness and summary, then publishes it.
func (r *reporter) publish(ps *paneState, c Classification) {
	rt, err := r.cfg.Registry.Update(ps.id, func(rt *nudge.Runtime) {
		rt.Readiness = c.State
		rt.Summary = c.Summary
		rt.Dialog = c.Dialog // output alone never gets here while a dialog is up (markBusy)
	})
	if err != nil {
		r.cfg.Logger.Debug("persist readiness failed", "runtime", ps.id, "error", err)
		return
	}
	ps.mu.Lock()
	busy := ps.opBusy
	ps.mu.Unlock()
	r.changed(rt, c, busy)
}

// changed publishes a pane's readiness and operator_busy.
func (r *reporter) changed(rt nudge.Runtime, c Classification, busy bool) {
	nudge.Publish(r.cfg.Bus, nudge.ReadinessChanged{RuntimeID: rt.RuntimeID, Workspace: rt.WorkspaceID, Readiness: c.State, Summary: c.Summary,
		ActionsNeeded: c.ActionsNeeded, Dialog: c.Dialog, OperatorBusy: busy})
}

// syncBusy recomputes operator_busy and persists it when it changes. Going quiet
// publishes OperatorQuiet and, first, if a human typed, HumanDone.
func (r *reporter) syncBusy(ps *paneState) {
	ps.persistMu.Lock()
	defer ps.persistMu.Unlock()
	now := r.cfg.Now()
	ps.mu.Lock()
	busy := ps.draft != "" || ps.inMode || ps.checking ||
		(!ps.lastKey.IsZero() && now.Before(ps.lastKey.Add(r.cfg.QuietWindow)))
	input := ps.input
	if input == "" {
		input = nudge.InputUnknown
	}
	if busy == ps.opBusy {
		ps.mu.Unlock()
		r.syncInput(ps, input)
		return
	}
	ps.opBusy = busy
	done := !busy && ps.humanSeen
	if done {
		ps.humanSeen = false
		ps.humanReported = now // the gates hold until HumanDone is taken up (Collision, HumanTaken)
	}
	c := ps.class
	ps.mu.Unlock()

	rt, err := r.cfg.Registry.Update(ps.id, func(rt *nudge.Runtime) {
		rt.OperatorBusy = busy
		rt.InputLine = input
	})
	if err != nil {
		r.cfg.Logger.Debug("persist operator_busy failed", "runtime", ps.id, "error", err)
		if done {
			ps.mu.Lock()
			ps.humanReported = time.Time{} // nothing was published: nothing to wait for
			ps.mu.Unlock()
		}
		return
	}
	r.changed(rt, c, busy)
	if busy {
		return
	}
	// The human's intervention is published before the pane is called quiet. Until its
	// subscriber (the pipeline) has set up what it asks (the orchestrator's sync, which
	// holds the worker's triggers) and says so (Monitor.HumanTaken), Collision holds the
	// pane, whatever goes first on the subscriber's goroutine or a lane's timer.
	if done {
		nudge.Publish(r.cfg.Bus, nudge.HumanDone{Runtime: rt})
	}
	nudge.Publish(r.cfg.Bus, nudge.OperatorQuiet{RuntimeID: ps.id})
}

// syncInput persists the runtime's input_line when it changed. Called with persistMu held.
func (r *reporter) syncInput(ps *paneState, input nudge.InputLine) {
	rt, ok := r.cfg.Registry.Get(ps.id)
	if !ok || rt.InputLine == input {
		return
	}
	if _, err := r.cfg.Registry.Update(ps.id, func(rt *nudge.Runtime) { rt.InputLine = input }); err != nil {
		r.cfg.Logger.Debug("persist input_line failed", "runtime", ps.id, "error", err)
	}
}
