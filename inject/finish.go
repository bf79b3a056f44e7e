package inject

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/panes"
)

// finisher drives a typed trigger to its end: the ack wait, the retries, the fallback
// chain, and the closing of its receipt (acked, failed, fell back). It owns the fallback
// bookkeeping, under mu: the runtimes a chain is relaunching, the runtimes a fallback
// spawned beside a kept pane, and the launches that hold a prompt in a runtime's own pane.
// It starts one goroutine per trigger waiting for its ack (awaitAck), one per running
// fallback chain (runFallback) and a short one per closed trigger (done): all counted
// in the pipeline's WaitGroup and stopped by the pipeline's Close.
type finisher struct {
	*core
	lanes    *lanes
	breakers *breakers // the lanes' circuit breakers: an ack closes one, a failure counts

	mu sync.Mutex
	// fallingBack: runtimes a fallback chain is relaunching (one chain at a time).
	fallingBack map[string]bool
	// aside: the runtime a fallback spawned beside a runtime whose pane it had to keep
	// (an operator at it, unmanaged): later fallbacks of that runtime go there instead
	// of spawning one runtime per trigger.
	aside map[string]string
	// launched: the trigger whose fallback launch (resume or spawn with its prompt) runs in
	// a runtime's own pane, and when: another trigger's fallback does not replace it
	// (until that trigger is acked, or MaxHold has passed).
	launched map[string]paneLaunch
	// refused: runtimes failed because their tmux refused send-keys (refused.go).
	refused map[string]refusal
	// asides: the runtimes a fallback spawned beside a kept pane, and when a trigger was
	// last handed to each; collecting and retiring: those being collected (aside.go).
	asides     map[string]time.Time
	collecting map[string]bool
	retiring   map[string]bool
}

// goAwaitAck waits for j's ack in its own goroutine; on timeout it schedules a retry or,
// with retries spent, the fallback chain.
func (f *finisher) goAwaitAck(j *job) {
	f.goOwned(func() {
		f.awaitAck(j)
	})
}

func (f *finisher) awaitAck(j *job) {
	t := j.record()
	timeout := f.cfg.AckTimeout
	if t.AckTimeoutMS > 0 {
		timeout = time.Duration(t.AckTimeoutMS) * time.Millisecond
	}
	if !j.ackFrom.IsZero() { // the agent showed the prompt only then (shownAtLast)
		timeout -= f.cfg.Now().Sub(j.ackFrom)
	} else if t.SubmittedAt != nil { // resumed after a restart: only what is left
		timeout -= f.cfg.Now().Sub(*t.SubmittedAt)
	}
	if f.deps.Acks == nil {
		return
	}
	f.deps.Acks.Expect(t)
	began := f.cfg.Now()
	// Wait in steps: while the pane draws, its screen is searched for the marker every
	// screenPoll, and always once more at the deadline, before a retry or the fallback.
	deadline := f.cfg.Now().Add(max(timeout, 0))
	var seen uint64
	for {
		step := min(screenPoll, max(deadline.Sub(f.cfg.Now()), 0))
		ctx, cancel := context.WithTimeout(f.ctx, step)
		sig, err := f.deps.Acks.Wait(ctx, t.TriggerID)
		stepOver := ctx.Err() != nil
		cancel()
		last := !f.cfg.Now().Before(deadline)
		since := &seen // during the wait: only if the pane drew since the last look
		if last {
			since = nil
		}
		switch {
		case err == nil:
			f.finishAcked(j, sig)
			return
		case f.ctx.Err() != nil:
			return // shutting down: the trigger stays open in the store and Open resumes it
		case !stepOver:
			return // nothing waits on it any more: it was closed another way
		case f.markerOnScreen(t, since):
			f.finishAcked(j, signalScreen)
			return
		case last && f.agentWorking(t, began):
			// The agent's own record shows it mid-turn: the prompt waits in its queue
			// (or the turn is this prompt's and its first entry is not written yet).
			// Typing it again could only give it twice; the wait goes on.
			deadline = f.cfg.Now().Add(max(timeout, f.cfg.AckTimeout))
		case last:
			f.ackTimedOut(j)
			return
		}
	}
}

// recordBusyMax bounds how long an ack wait goes on because the agent's record shows it
// mid-turn (a turn that never ends in the record is a hung agent).
const recordBusyMax = 30 * time.Minute

// working is an Acker that can tell, from the agent's own record, that it is mid-turn.
type working interface {
	Working(runtimeID string) bool
}

// agentWorking reports whether t's ack wait, begun at began, goes on because the agent is
// at work: its record shows it mid-turn, or, for an agent whose record nudge does not read
// (yet: Pi writes nothing before its first answer is complete; OpenCode's is not read),
// its screen reads BUSY. A retype could only give the prompt twice.
func (f *finisher) agentWorking(t nudge.Trigger, began time.Time) bool {
	if t.RuntimeID == "" || f.cfg.Now().Sub(began) >= recordBusyMax {
		return false
	}
	if w, ok := f.deps.Acks.(working); ok && w.Working(t.RuntimeID) {
		return true
	}
	rt, ok := f.deps.Runtimes.Get(t.RuntimeID)
	if !ok || f.deps.Gates == nil {
		return false
	}
	prof, _ := f.deps.Runtimes.Profile(rt.Agent)
	l, live := f.deps.Acks.(recordLive)
	agent := prof.Record != "" || prof.Pack != "" && prof.Pack != "shell" // a TUI agent, not a program in a shell
	return agent && !(live && l.RecordLive(rt.RuntimeID)) && f.deps.Gates.Readiness(rt) == nudge.Busy
}

// signalRecord is the ack signal of a prompt found in the agent's own record
// (ack.SignalRecord).
const signalRecord = "record"

// evidencer is an Acker that knows where it saw an ack (the record's file and line).
type evidencer interface {
	Evidence(triggerID string) string
}

// ackTimedOut retries the trigger after the next backoff, or falls back.
func (f *finisher) ackTimedOut(j *job) {
	if sig, ok := f.inRecord(j); ok {
		f.finishAcked(j, sig)
		return
	}
	f.withdraw(j)
	t := j.record()
	wait, retry := f.cfg.retryAfter(t.Attempts)
	if !retry {
		f.startFallback(j, nudge.AckTimeout, "no ack after retries")
		return
	}
	now := f.cfg.Now()
	j.retryAt = now.Add(wait)
	rec := j.update(now, func(t *nudge.Trigger) { t.NextAttemptAt = tp(j.retryAt); t.Message = "no ack yet: retrying" })
	f.persist(j, f.auditDetail("trigger_retry", rec, "ack timeout", map[string]any{
		"attempt": rec.Attempts + 1, "backoff_ms": wait.Milliseconds()}))
	f.transition(rec.RuntimeID, nudge.StatusRetrying, "ack timeout for "+rec.TriggerID)
	f.lanes.laneFor(rec.RuntimeID).push(j, true)
}

// retryAfter says whether a trigger delivered `attempts` times without an ack gets
// another attempt, and the backoff before it (the last Backoff entry repeats).
func (c *Config) retryAfter(attempts int) (time.Duration, bool) {
	if attempts > c.AckRetries {
		return 0, false
	}
	if len(c.Backoff) == 0 || attempts < 1 {
		return 0, true
	}
	return c.Backoff[min(attempts-1, len(c.Backoff)-1)], true
}

// finishAcked records j's ack (the Acker's signal, the marker found on screen, or an ack
// found before a retry) and closes it.
func (f *finisher) finishAcked(j *job, signal string) {
	f.mu.Lock()
	for rt, l := range f.launched {
		if l.trigger == j.id() {
			delete(f.launched, rt) // its fallback launch took the prompt: the pane is the runtime's again
		}
	}
	f.mu.Unlock()
	if signal == signalRecord {
		// Its user message is in the agent's record, but the agent may still be taking it
		// in (Gemini CLI reads a large paste for seconds after writing it): the next
		// trigger keeps waiting until the agent draws, as the intake gate says.
		j.keepIntake = true
	} else if in, ok := f.deps.Gates.(Intake); ok {
		// Before the receipt says acked: a caller that sends the next trigger as soon as it
		// reads acked must not find the agent still taking this one in.
		in.Settled(j.record().RuntimeID, j.id())
	}
	now := f.cfg.Now()
	rec := j.update(now, func(t *nudge.Trigger) {
		t.State = nudge.StateAcked
		t.AckedAt, t.DeliveredAt = tp(now), tp(now) // delivered means acknowledged
		t.AckSignal = signal
		t.NextAttemptAt = nil
		t.Closed = true
		t.Result = resultFor(t)
	})
	ackRec := f.audit("ack_received", rec, signal)
	if e, ok := f.deps.Acks.(evidencer); ok {
		if ev := e.Evidence(rec.TriggerID); ev != "" {
			ackRec.Detail = mustJSON(map[string]string{"evidence": ev})
		}
	}
	f.persist(j, ackRec)
	f.breakers.success(rec.RuntimeID)
	// The runtime's transition is queued before the flush so that it goes in the same
	// commit (one fsync per closed trigger, not two).
	f.transition(rec.RuntimeID, nudge.StatusReady, "ack for "+rec.TriggerID)
	// An ack is made durable at once, not with the next write-behind batch: a kill -9 in
	// between would leave the restarted daemon an answered prompt in `submitted`, and its
	// retry could type it again into an agent whose marker has left the pane (a relaunch).
	f.deps.Store.Flush()
	f.done(j)
}

func (f *finisher) finishFailed(j *job, code nudge.Code, why string) {
	f.countFailure(j, code)
	now := f.cfg.Now()
	rec := j.update(now, func(t *nudge.Trigger) {
		t.State = nudge.StateFailed
		t.FailedAt = tp(now)
		t.ErrorCode, t.Message = code, why
		t.Closed = true
		t.Result = resultFor(t)
	})
	j.decide()
	if rt, ok := f.deps.Runtimes.Get(rec.RuntimeID); ok && rec.Fallback != "" && waitingOn(rt.Status) {
		// The runtime a fallback launched did not take the prompt typed into it: it is
		// the runtime's program now, waiting for the next trigger, not for this one.
		f.transition(rec.RuntimeID, nudge.StatusReady, "trigger "+rec.TriggerID+" failed")
	}
	f.persist(j, f.audit("trigger_failed", rec, why))
	f.done(j)
}

// startFallback hands j to the fallback chain in its own goroutine.
func (f *finisher) startFallback(j *job, code nudge.Code, why string) {
	if j.record().Attempts > 0 || j.maybeTyped {
		// It may have reached the agent: a prompt its record holds is not given again.
		if sig, ok := f.inRecord(j); ok {
			f.finishAcked(j, sig)
			return
		}
	}
	f.countFailure(j, code)
	if f.deps.Fallback == nil {
		f.finishFailed(j, code, why)
		return
	}
	keep := f.paneTaken(j.record().RuntimeID, j.id())
	if rt, ok := f.asideFor(j.record().RuntimeID, code, keep); ok && j.record().Fallback == "" {
		// An earlier fallback already spawned a runtime beside this one: deliver there
		// instead of spawning one runtime per trigger.
		j.update(f.cfg.Now(), func(*nudge.Trigger) { j.cause.code, j.cause.why = code, why })
		f.deliverTo(j, rt.RuntimeID, rt.PaneID, nudge.BackendSpawn, "fallback_redirect",
			string(code)+": "+why+"; delivering to "+rt.RuntimeID+", spawned beside it by an earlier fallback")
		return
	}
	if t := j.record(); t.Fallback != "" {
		// Its fallback already relaunched the runtime and the live delivery to the fresh
		// one failed too: no second relaunch for the same trigger.
		f.finishFailed(j, code, why+" (after the fallback "+t.Fallback+")")
		return
	}
	now := f.cfg.Now()
	rt := j.record().RuntimeID
	if !f.beginFallback(rt) {
		// Another trigger's fallback is relaunching this runtime: wait for it, then go
		// through the gates again (the relaunched agent may take this one live).
		j.retryAt = now.Add(fallbackWait)
		f.markDeferred(j, verdict{kind: hold, code: nudge.FallbackInProgress, why: "waiting for the runtime's fallback relaunch", until: j.retryAt}, now)
		f.lanes.laneFor(rt).push(j, true)
		return
	}
	rec := j.update(now, func(t *nudge.Trigger) {
		t.ErrorCode, t.Message = code, why
		j.cause.code, j.cause.why = code, why
	})
	j.decide()
	f.persist(j, f.audit("fallback_required", rec, why))
	f.goOwned(func() {
		defer f.endFallback(rt)
		f.runFallback(j, code, keep)
	})
}

// paneLaunch is a fallback launch that holds a trigger's prompt in a runtime's own pane.
type paneLaunch struct {
	trigger string
	at      time.Time
}

// paneTaken reports whether runtimeID's pane runs another trigger's fallback launch that
// is not acked yet (within MaxHold): a fallback for trigger id must then keep the pane.
func (f *finisher) paneTaken(runtimeID, id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.launched[runtimeID]
	return ok && l.trigger != id && f.cfg.Now().Sub(l.at) < f.cfg.MaxHold
}

// fallbackWait is how often a trigger held behind another's fallback looks again.
const fallbackWait = 250 * time.Millisecond

// fallbackTimeout bounds a whole fallback chain (its launches wait a short grace each; a
// tmux that stops answering must not hold the trigger, and those behind it, for good).
const fallbackTimeout = 5 * time.Minute

// beginFallback claims the runtime for one fallback chain at a time ("" never conflicts).
func (f *finisher) beginFallback(runtimeID string) bool {
	if runtimeID == "" {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fallingBack[runtimeID] {
		return false
	}
	f.fallingBack[runtimeID] = true
	return true
}

func (f *finisher) endFallback(runtimeID string) {
	if runtimeID == "" {
		return
	}
	f.mu.Lock()
	delete(f.fallingBack, runtimeID)
	f.mu.Unlock()
	f.lanes.kick(runtimeID)
}

func (f *finisher) runFallback(j *job, code nudge.Code, keep bool) {
	from := j.record().RuntimeID
	ctx, cancel := context.WithTimeout(f.ctx, fallbackTimeout)
	l, err := f.deps.Fallback.Fallback(ctx, j.record(), code, keep)
	cancel()
	if f.ctx.Err() != nil {
		return
	}
	if err == nil && l.RuntimeID != "" {
		f.mu.Lock()
		if l.RuntimeID != from {
			f.aside[from] = l.RuntimeID
			f.usedAsideLocked(l.RuntimeID)
		} else {
			// The launch in the runtime's own pane is for this trigger's prompt (given
			// at launch, or typed live next): another trigger's fallback keeps that pane.
			f.launched[from] = paneLaunch{trigger: j.id(), at: f.cfg.Now()}
		}
		f.mu.Unlock()
	}
	if err == nil && !l.Given {
		if l.RuntimeID == "" {
			f.finishFailed(j, nudge.SpawnFailed, "fresh runtime started without the prompt and no runtime to deliver it to")
			return
		}
		// The launched runtime is up but has not got the prompt (none goes on a command
		// line): it goes through the gates again and is typed into that runtime's pane
		// (never the old one's, unless the launch took the old one's place) once that is
		// ready. Only once: another failure of that delivery ends the trigger
		// (startFallback).
		f.deliverTo(j, l.RuntimeID, l.PaneID, l.Backend, "fallback_deliver_live",
			"runtime "+l.RuntimeID+" (pane "+l.PaneID+", "+l.Backend+") started without the prompt: delivering it live there")
		return
	}
	if err != nil {
		fc := nudge.ResumeFailed
		var ne *nudge.Error
		if errors.As(err, &ne) {
			fc = ne.Code
		}
		f.finishFailed(j, fc, err.Error())
		return
	}
	now := f.cfg.Now()
	rec := j.update(now, func(t *nudge.Trigger) {
		t.State = nudge.StateSubmitted
		t.SubmittedAt, t.DeliveredAt = tp(now), tp(now)
		t.DeliveryBackend, t.Fallback = l.Backend, l.Backend
		t.FallbackRuntimeID, t.FallbackPane = l.RuntimeID, l.PaneID
		t.Closed = true
		t.Result = resultFor(t)
	})
	f.lastTrigger(rec)
	f.persist(j, f.auditDetail("trigger_fell_back", rec, l.Backend, map[string]any{
		"backend": l.Backend, "runtime_id": l.RuntimeID, "pane_id": l.PaneID}))
	f.done(j)
}

// deliverTo moves j to runtime id's lane for a live delivery there (a fresh runtime a
// fallback started without the prompt, or the runtime an earlier fallback spawned beside
// a kept pane). The receipt names the runtime and its pane.
func (f *finisher) deliverTo(j *job, id, pane, backend, event, why string) {
	now := f.cfg.Now()
	old := j.record().RuntimeID
	if old != id {
		if f.deps.Acks != nil {
			f.deps.Acks.Forget(j.id()) // its ack comes from the new runtime's pane
		}
		f.breakers.settle(old, j.id())
	}
	rec := j.update(now, func(t *nudge.Trigger) {
		t.Fallback, t.FallbackRuntimeID, t.FallbackPane = backend, id, pane
		t.RuntimeID = id
		t.Message = why
	})
	f.persist(j, f.auditDetail(event, rec, why, map[string]any{"from_runtime_id": old, "runtime_id": id, "pane_id": pane}))
	j.maybeTyped, j.retryAt, j.paneHold, j.deferStart, j.holdStart = true, time.Time{}, time.Time{}, time.Time{}, time.Time{}
	f.lanes.laneFor(id).push(j, true)
}

// asideFor returns the live runtime an earlier fallback spawned beside runtimeID, if the
// cause is one that keeps runtimeID's pane (or keep says it must be kept).
func (f *finisher) asideFor(runtimeID string, code nudge.Code, keep bool) (nudge.Runtime, bool) {
	switch code {
	case nudge.DeferTimeout, nudge.OperatorBusy, nudge.UnmanagedRuntime:
	default:
		if !keep {
			return nudge.Runtime{}, false
		}
	}
	f.mu.Lock()
	id := f.aside[runtimeID]
	f.mu.Unlock()
	if rt, ok := f.deps.Runtimes.Get(id); ok && id != "" && rt.Managed && panes.Live(rt.Status) && f.useAside(id) {
		return rt, true
	}
	// After a daemon restart: the newest live runtime named ROLE-fb-* in the workspace.
	from, ok := f.deps.Runtimes.Get(runtimeID)
	l, canList := f.deps.Runtimes.(interface{ List() []nudge.Runtime })
	if !ok || !canList {
		return nudge.Runtime{}, false
	}
	var best nudge.Runtime
	for _, rt := range l.List() {
		if rt.WorkspaceID == from.WorkspaceID && strings.HasPrefix(rt.Role, from.Role+panes.AsideMarker) &&
			rt.Managed && panes.Live(rt.Status) && rt.CreatedAt.After(best.CreatedAt) {
			best = rt
		}
	}
	if best.RuntimeID == "" || !f.useAside(best.RuntimeID) {
		return nudge.Runtime{}, false
	}
	return best, true
}

// useAside claims fallback runtime id for a trigger, unless it is being collected.
func (f *finisher) useAside(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.retiring[id] {
		return false
	}
	f.usedAsideLocked(id)
	return true
}

// unroutable handles a trigger with no managed runtime: an unknown one fails with
// UNMANAGED_RUNTIME (the caller must fall back itself); a registered but unmanaged one
// goes straight to the fallback chain.
func (f *finisher) unroutable(j *job, known bool) {
	if known {
		f.startFallback(j, nudge.UnmanagedRuntime, "runtime is not managed: live delivery skipped")
		return
	}
	t := j.record()
	f.finishFailed(j, nudge.UnmanagedRuntime, "no managed runtime "+t.WorkspaceID+"/"+t.Agent+": fallback required")
}

// done forgets a closed job once its last write is in the store (until then Get keeps
// answering from memory, so a receipt never goes back to an older state).
func (f *finisher) done(j *job) {
	f.breakers.settle(j.record().RuntimeID, j.id())
	if in, ok := f.deps.Gates.(Intake); ok && !j.keepIntake {
		in.Settled(j.record().RuntimeID, j.id())
	}
	if f.deps.Acks != nil {
		f.deps.Acks.Forget(j.id())
	}
	f.goOwned(func() {
		f.deps.Store.Settle() // with the next batch: no commit of its own
		f.forget(j)
	})
	f.collectAside(j.record().RuntimeID) // a fallback runtime whose prompt is done
}

func uidPtr(uid int) *int {
	if uid < 0 {
		return nil
	}
	return &uid
}

// ackAfterFallback records an ack for a trigger whose live path ended in a fallback
// launch (the resumed agent acknowledged it). Other triggers are acked through Acker.
func (f *finisher) ackAfterFallback(id, signal string) (nudge.Trigger, bool, error) {
	f.deps.Store.Flush() // the fallback's own write-behind record first
	t, err := f.deps.Store.Triggers().UpdateTrigger(id, func(t *nudge.Trigger) error {
		if t.Fallback == "" || t.State != nudge.StateSubmitted {
			return errNotFallback
		}
		now := f.cfg.Now()
		t.State, t.AckedAt, t.AckSignal, t.UpdatedAt = nudge.StateAcked, &now, signal, now
		t.Result = resultFor(t)
		return nil
	})
	if errors.Is(err, errNotFallback) {
		return nudge.Trigger{}, false, nil
	}
	if err == nil {
		f.logOutcome(t) // acked after its fallback launch closed it: the outcome as it ends
		f.changed(t)
		f.mu.Lock()
		for rt, l := range f.launched {
			if l.trigger == id {
				delete(f.launched, rt)
			}
		}
		f.mu.Unlock()
	}
	return t, err == nil, err
}

// waitingOn reports whether a runtime's status says it waits on a trigger's delivery.
func waitingOn(s nudge.Status) bool {
	return s == nudge.StatusTriggering || s == nudge.StatusAwaitingAck || s == nudge.StatusRetrying
}
