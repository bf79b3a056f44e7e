package detector

import "github.com/nudgehq/nudge"

// reporter persists what the pane goroutines and the gates learn about a pane (readiness
// and summary, operator_busy, the input line) through the Registry, and reports it
// through MonitorConfig's callbacks (OnChange, OnQuiet, OnHumanDone). It has no state of
// its own: what was last persisted is the pane's (paneState.opBusy, input), and the pane's
// persistMu serialises its operator_busy decisions with their persistence. It runs on
// the caller's goroutine.
type reporter struct{ cfg *MonitorConfig }

// publish persists a changed readiness and summary, then calls OnChange.
func (r *reporter) publish(ps *paneState, c Classification) {
	_, err := r.cfg.Registry.Update(ps.id, func(rt *nudge.Runtime) {
		rt.Readiness = c.State
		rt.Summary = c.Summary
		rt.Dialog = c.Dialog // output alone never gets here while a dialog is up (markBusy)
	})
	if err != nil {
		r.cfg.Logger.Debug("persist readiness failed", "runtime", ps.id, "error", err)
		return
	}
	if r.cfg.OnChange != nil {
		ps.mu.Lock()
		busy := ps.opBusy
		ps.mu.Unlock()
		r.cfg.OnChange(ps.id, c, busy)
	}
}

// syncBusy recomputes operator_busy and persists it when it changes. Going quiet calls
// OnQuiet and, if a human typed, OnHumanDone.
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
		ps.reportingHuman = true // the gates hold until OnHumanDone has run (Collision)
	}
	c := ps.class
	ps.mu.Unlock()
	if done {
		defer func() {
			ps.mu.Lock()
			ps.reportingHuman = false
			ps.mu.Unlock()
		}()
	}

	rt, err := r.cfg.Registry.Update(ps.id, func(rt *nudge.Runtime) {
		rt.OperatorBusy = busy
		rt.InputLine = input
	})
	if err != nil {
		r.cfg.Logger.Debug("persist operator_busy failed", "runtime", ps.id, "error", err)
		return
	}
	if r.cfg.OnChange != nil {
		r.cfg.OnChange(ps.id, c, busy)
	}
	if busy {
		return
	}
	// The human's intervention is reported before the pane is called quiet: what
	// OnHumanDone sets up (the orchestrator's sync, which holds the worker's triggers) is
	// in place before OnQuiet lets deferred triggers go.
	if done && r.cfg.OnHumanDone != nil {
		r.cfg.OnHumanDone(rt)
	}
	if done {
		ps.mu.Lock()
		ps.reportingHuman = false
		ps.mu.Unlock()
	}
	if r.cfg.OnQuiet != nil {
		r.cfg.OnQuiet(ps.id)
	}
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
