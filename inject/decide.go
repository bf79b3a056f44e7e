package inject

import (
	"fmt"
	"time"

	"github.com/nudgehq/nudge"
)

// decide is the lane's first step for the trigger at its front: a pure function of what
// the gates say now (view), gathered by the lane (Pipeline.view) beforehand. It applies
// the gates in order — runtime alive, loop guard, force, circuit breaker, pause, rate
// limit, human collision, an orchestrator's sync, readiness — and returns the verdict
// with the job's hold clocks as they are after it (the lane stores them) and the few
// effects it asks of the lane: take the breaker's probe slot, drop a sync hold that
// ended, quote the pane's last lines, report a collision.

// view is what decide reads: a trigger's record and hold clocks, its runtime, the policy
// windows, and every gate's answer for it now.
type view struct {
	windows
	t      nudge.Trigger
	rt     nudge.Runtime
	forced bool      // an operator's Force (admin)
	clocks jobClocks // the job's hold clocks as they stand

	refused       string    // a failed runtime whose tmux refused keys in its pane: why ("": not so)
	stopped       bool      // an offline runtime an operator stopped
	startDeadline time.Time // a starting runtime's start deadline (zero: unknown)

	loopBlocked bool
	loopWhy     string
	rateOK      bool
	rateUntil   time.Time // !rateOK: when both rate limits let one through
	breaker     breakerView

	gates          bool // Deps.Gates is set: the detector's answers below mean something
	busy           bool // a person at the pane (Gates.Collision)
	busyUntil      time.Time
	busyWhy        string
	sync           syncView
	intakeID       string // the trigger whose prompt the agent is still taking in (Intake)
	intakeUntil    time.Time
	readiness      nudge.Readiness
	hasWorking     bool // Gates implements Working
	working        bool
	queuesInput    bool // the runtime's profile queues input
	submittedIsAck bool // the runtime's profile takes submitted as acked (nothing acks at all: true)
}

// breakerView is a runtime's circuit breaker as the gates read it.
type breakerView struct {
	off   bool   // no breakers (BreakerFailures < 0)
	state string // "", open, half_open
	until time.Time
	probe string // half_open: the trigger probing the runtime
}

// syncView is the orchestrator's sync hold on the runtime, if any.
type syncView struct {
	held  bool
	h     syncHold
	taken bool // the sync trigger was taken (or closed, or never came)
}

// decide applies the gates to v. The hold clock runs only while an agent or runtime state
// holds the trigger.
func decide(v view) verdict {
	out := gates(&v)
	if out.kind != hold || !agentHold(out.code) {
		v.clocks.holdStart = time.Time{}
	}
	out.clocks = v.clocks
	return out
}

func gates(v *view) verdict {
	t, rt := v.t, v.rt
	if !rt.Managed {
		// Never typed into (seed 001 §4.2), also for a trigger that came back to the
		// lane after waiting for another trigger's fallback.
		return verdict{kind: fallback, code: nudge.UnmanagedRuntime, why: "runtime is not managed: live delivery skipped"}
	}
	switch rt.Status {
	case nudge.StatusFailed:
		if v.refused != "" {
			return verdict{kind: fail, code: nudge.SendKeysError, why: "runtime is failed: " + v.refused + " (nudge restart " + rt.RuntimeID + " once tmux takes keys again)"}
		}
		return verdict{kind: fallback, code: nudge.PaneDead, why: "runtime is " + string(rt.Status)}
	case nudge.StatusOffline, nudge.StatusDeregistered, nudge.StatusExited:
		if rt.Status == nudge.StatusOffline && v.stopped {
			// Stopped by an operator: it stays down; no fallback starts it again.
			return verdict{kind: fail, code: nudge.RuntimeStopped, why: "runtime " + rt.RuntimeID +
				" was stopped (nudge stop) and stays stopped: start it again with `nudge restart " + rt.RuntimeID + "`"}
		}
		return verdict{kind: fallback, code: nudge.PaneDead, why: "runtime is " + string(rt.Status)}
	case nudge.StatusStarting, nudge.StatusFallbackResume, nudge.StatusSpawnRecovery:
		return startingHold(v)
	}
	if t.ThreadID != "" && t.ScheduleID == "" && v.loopBlocked {
		return verdict{kind: fail, code: nudge.ThreadAutoBlocked, why: v.loopWhy}
	}
	if t.ForceOverride {
		// Explicit operator intent (seed 000 §13.2, §14: force-inject a deferred trigger):
		// past the pause, the breaker, the operator and the readiness. Past the rate limit
		// and a dialog only when an operator forced it (Force, admin): a force_override
		// asked with the trigger is a trigger token's own word, and the runtime's budget
		// and the dialog's answer verb hold for it.
		if v.forced {
			return verdict{kind: proceed}
		}
		if !v.rateOK {
			return verdict{kind: hold, code: nudge.TriggerRateLimited, why: "rate limit reached (force_override does not lift it; an operator's nudge force does)", until: v.rateUntil}
		}
		// Nor into a dialog: typed there, its Enter answers it, for a caller that may not
		// answer dialogs (the answer verb), past the live-dialog rule and the audit.
		if v.gates && v.readiness == nudge.NeedsConfirmation {
			return holdFor(v, nudge.AgentNeedsConfirmation, "agent shows a dialog: force_override does not type into it (answer it: nudge answer; an operator's nudge force does)", time.Time{})
		}
		return verdict{kind: proceed}
	}
	// A fallback's own delivery into the runtime it launched (the prompt that used to go
	// on that launch's command line) is not held by the breaker its failure opened; it
	// may still take the probe slot.
	until, why, held, probe := admitView(v.breaker, t.TriggerID, v.now)
	if held && t.Fallback == "" {
		out := holdFor(v, nudge.RuntimeCooldown, why, until)
		out.probe = probe
		return out
	}
	out := afterBreaker(v)
	out.probe = probe
	return out
}

// afterBreaker is the gates after the circuit breaker: pause, rate limit, collision,
// sync, readiness.
func afterBreaker(v *view) verdict {
	if v.rt.Paused {
		return holdFor(v, nudge.RuntimePaused, "triggers paused for this runtime", time.Time{})
	}
	if !v.rateOK {
		return verdict{kind: hold, code: nudge.TriggerRateLimited, why: "rate limit reached", until: v.rateUntil}
	}
	if out, held := collision(v); held {
		return out
	}
	sync, held := syncGate(v)
	if held {
		return sync
	}
	out := readiness(v)
	out.dropSync = sync.dropSync
	return out
}

// admitView is the breaker's answer for trigger id at now (breakers.admit without its
// change): held until when and why, and whether id takes (or keeps) the probe slot.
func admitView(b breakerView, id string, now time.Time) (until time.Time, why string, held, probe bool) {
	switch {
	case b.off || b.state == "":
		return time.Time{}, "", false, false
	case b.state == BreakerOpen && now.Before(b.until):
		return b.until, "runtime cooling down after repeated failed triggers", true, false
	case b.state == BreakerOpen, b.probe == "" || b.probe == id:
		return time.Time{}, "", false, true
	}
	return time.Time{}, "runtime half-open after a cooldown: waiting for probe trigger " + b.probe, true, false
}

// startingHold holds a trigger for a runtime that cannot take one yet: still starting (its
// agent has not shown READY: RUNTIME_STARTING until its start deadline, when the registry
// fails the start and the trigger takes the fallback path), or being relaunched by a
// fallback (FALLBACK_IN_PROGRESS on the hold clock: a resume run in the runtime's pane
// reads no input). Nothing is typed into it meanwhile.
func startingHold(v *view) verdict {
	why := "runtime is " + v.rt.Status + ": not ready for input yet"
	if v.rt.Status != nudge.StatusStarting {
		return holdFor(v, nudge.FallbackInProgress, string(why), time.Time{})
	}
	out := verdict{kind: hold, code: nudge.RuntimeStarting, why: string(why)}
	if v.startDeadline.After(v.now) {
		out.until = v.startDeadline
	}
	return out
}

// collision holds a trigger while a person is at the pane, on the collision clock.
func collision(v *view) (verdict, bool) {
	if !v.gates {
		return verdict{}, false
	}
	if !v.busy {
		v.clocks.deferStart, v.clocks.collided = time.Time{}, false
		return verdict{}, false
	}
	if v.clocks.deferStart.IsZero() {
		v.clocks.deferStart = v.now
	}
	limit := v.clocks.deferStart.Add(v.maxDefer)
	if !v.now.Before(limit) {
		return operatorHold(v.windows, &v.clocks, v.t, v.rt.RuntimeID, v.clocks.deferStart, v.busyUntil, v.busyWhy), true
	}
	until := v.busyUntil
	if until.IsZero() || until.After(limit) {
		until = limit
	}
	return verdict{kind: hold, code: nudge.OperatorBusy, why: v.busyWhy, until: until}, true
}

// syncGate holds a trigger while its runtime waits for an orchestrator's sync; a hold
// whose sync trigger was taken, or that is past MaxHold, is dropped.
func syncGate(v *view) (verdict, bool) {
	h := v.sync.h
	if !v.sync.held || h.trigger == v.t.TriggerID {
		return verdict{}, false
	}
	end := h.since.Add(v.maxHold)
	if v.sync.taken || !v.now.Before(end) {
		return verdict{dropSync: true}, false
	}
	return verdict{kind: hold, code: nudge.OrchestratorSync, until: end, poll: syncPoll,
		why: "a human intervened in this pane: waiting for the orchestrator to take sync trigger " + h.trigger}, true
}

// readiness holds a trigger for an agent that cannot take it now: a confirmation dialog
// (never typed into unless forced), or, for an agent that does not queue input, a busy
// or not understood screen.
func readiness(v *view) verdict {
	if !v.gates {
		return verdict{kind: proceed}
	}
	// Also for an agent that queues input: typed now, the prompt would wait behind the
	// one it reads, and its receipt would not say so.
	if v.intakeID != "" && v.intakeID != v.t.TriggerID {
		out := holdFor(v, nudge.AgentBusy, "agent is BUSY taking in trigger "+v.intakeID+
			"'s prompt: it left the composer and the agent has drawn nothing since", v.intakeUntil)
		out.poll = intakePoll
		return out
	}
	r := v.readiness
	if v.hasWorking {
		v.clocks.typedBusy = r == nudge.Busy && v.working // let through only if the agent queues input
	}
	var code nudge.Code
	switch {
	case r == nudge.NeedsConfirmation:
		code = nudge.AgentNeedsConfirmation
	case r == nudge.Busy && !v.queuesInput:
		code = nudge.AgentBusy
	case r == nudge.Unknown && !v.queuesInput:
		code = nudge.AgentUnknown
	}
	if code == "" {
		return verdict{kind: proceed}
	}
	return holdFor(v, code, "agent is "+string(r), time.Time{})
}

// holdFor holds a trigger on the hold clock for an agent or runtime state. until is when
// the state may end, if known. Once MaxHold has passed since the hold began, the verdict
// is DEFER_TIMEOUT and the fallback chain, with the last screen lines as evidence (the
// lane quotes them: evidence).
func holdFor(v *view, code nudge.Code, why string, until time.Time) verdict {
	if v.clocks.holdStart.IsZero() {
		v.clocks.holdStart = v.now
	}
	limit := v.clocks.holdStart.Add(v.maxHold)
	if !v.now.Before(limit) {
		if code == nudge.RuntimePaused {
			// An operator paused the runtime: no fallback launches an agent in its stead.
			return verdict{kind: fail, code: nudge.DeferTimeout, why: fmt.Sprintf("held %s past the max hold (%s): %s", code, v.maxHold, why)}
		}
		return verdict{kind: fallback, code: nudge.DeferTimeout, evidence: true,
			why: fmt.Sprintf("held %s past the max hold (%s): %s", code, v.maxHold, why)}
	}
	if until.IsZero() || until.After(limit) {
		until = limit
	}
	return verdict{kind: hold, code: code, why: why, until: until}
}

// operatorHold is the verdict for trigger t, which a person has held since since, at
// w.now past the max defer window: held on (the collision reported once: c.collided)
// until MaxHold after the window, then failed with DEFER_TIMEOUT. until is when the
// person may be done (zero: unknown).
func operatorHold(w windows, c *jobClocks, t nudge.Trigger, runtimeID string, since, until time.Time, why string) verdict {
	end := since.Add(w.maxDefer + w.maxHold)
	if !w.now.Before(end) {
		return verdict{kind: fail, code: nudge.DeferTimeout, why: fmt.Sprintf(
			"operator busy past the max defer window (%s) and the max hold after it (%s): %s; nothing was typed and no agent was started beside their pane",
			w.maxDefer, w.maxHold, why)}
	}
	var report *Collision
	if !c.collided {
		c.collided = true
		report = &Collision{TriggerID: t.TriggerID, ThreadID: t.ThreadID, RuntimeID: runtimeID,
			Code: nudge.DeferTimeout, Operator: why, Since: since, HeldUntil: end}
	}
	if until.IsZero() || until.After(end) {
		until = end
	}
	return verdict{kind: hold, code: nudge.OperatorBusy, until: until, collision: report,
		why: fmt.Sprintf("held for the operator past the max defer window (%s; collision reported): %s", w.maxDefer, why)}
}
