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

// A typed trigger's end: the ack wait, the retries, the fallback chain, and the closing
// of its receipt (acked, failed, fell back). The pipeline starts one goroutine per
// trigger waiting for its ack (awaitAck), one per running fallback chain (runFallback)
// and a short one per closed trigger (done): all counted in its WaitGroup and stopped by
// its Close. The ack wait's and the chain's goroutines post their ends to the job's lane
// (post), whose goroutine applies them.

// fallbacks is the fallback chains' bookkeeping, under mu: the runtimes a chain is
// relaunching, the runtimes a fallback spawned beside a kept pane, and the launches that
// hold a prompt in a runtime's own pane.
type fallbacks struct {
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

func newFallbacks() fallbacks {
	return fallbacks{fallingBack: map[string]bool{}, aside: map[string]string{}, launched: map[string]paneLaunch{},
		refused: map[string]refusal{}, asides: map[string]time.Time{}, collecting: map[string]bool{}, retiring: map[string]bool{}}
}

// goAwaitAck waits for j's ack in its own goroutine and hands the wait's end to j's
// lane (post): the ack, or, on timeout, a retry or, with retries spent, the fallback
// chain. The lane's goroutine applies it.
func (p *Pipeline) goAwaitAck(j *job) {
	p.goOwned(func() {
		var end func(*lane)
		switch o := p.awaitAck(j); o.kind {
		case oAcked:
			end = func(*lane) { p.finishAcked(j, o.signal) }
		case oAckTimeout:
			end = p.ackTimedOut(j)
		default:
			return
		}
		p.post(j, end)
	})
}

// awaitAck waits for j's ack: oAcked, oAckTimeout, or oStopped (the pipeline is closing,
// or the trigger was closed another way).
func (p *Pipeline) awaitAck(j *job) outcome {
	t := j.record()
	timeout := p.cfg.AckTimeout
	if t.AckTimeoutMS > 0 {
		timeout = time.Duration(t.AckTimeoutMS) * time.Millisecond
	}
	if from := j.clocks.ackFrom; !from.IsZero() { // the agent showed the prompt only then (oShown)
		timeout -= p.cfg.Now().Sub(from)
	} else if t.SubmittedAt != nil { // resumed after a restart: only what is left
		timeout -= p.cfg.Now().Sub(*t.SubmittedAt)
	}
	if p.deps.Acks == nil {
		return outcome{kind: oStopped}
	}
	p.deps.Acks.Expect(t)
	began := p.cfg.Now()
	// Wait in steps: while the pane draws, its screen is searched for the marker every
	// screenPoll, and always once more at the deadline, before a retry or the fallback.
	deadline := p.cfg.Now().Add(max(timeout, 0))
	var seen uint64
	for {
		step := min(screenPoll, max(deadline.Sub(p.cfg.Now()), 0))
		ctx, cancel := context.WithTimeout(p.ctx, step)
		sig, err := p.deps.Acks.Wait(ctx, t.TriggerID)
		stepOver := ctx.Err() != nil
		cancel()
		last := !p.cfg.Now().Before(deadline)
		since := &seen // during the wait: only if the pane drew since the last look
		if last {
			since = nil
		}
		switch {
		case err == nil:
			return outcome{kind: oAcked, signal: sig}
		case p.ctx.Err() != nil:
			return outcome{kind: oStopped} // shutting down: the trigger stays open in the store and Open resumes it
		case !stepOver:
			return outcome{kind: oStopped} // nothing waits on it any more: it was closed another way
		case p.markerOnScreen(t, since):
			return outcome{kind: oAcked, signal: signalScreen}
		case last && p.agentWorking(t, began):
			// The agent's own record shows it mid-turn: the prompt waits in its queue
			// (or the turn is this prompt's and its first entry is not written yet).
			// Typing it again could only give it twice; the wait goes on.
			deadline = p.cfg.Now().Add(max(timeout, p.cfg.AckTimeout))
		case last:
			return outcome{kind: oAckTimeout}
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
func (p *Pipeline) agentWorking(t nudge.Trigger, began time.Time) bool {
	if t.RuntimeID == "" || p.cfg.Now().Sub(began) >= recordBusyMax {
		return false
	}
	if w, ok := p.deps.Acks.(working); ok && w.Working(t.RuntimeID) {
		return true
	}
	rt, ok := p.deps.Runtimes.Get(t.RuntimeID)
	if !ok || p.deps.Gates == nil {
		return false
	}
	prof, _ := p.deps.Runtimes.Profile(rt.Agent)
	l, live := p.deps.Acks.(recordLive)
	agent := prof.Record != "" || prof.Pack != "" && prof.Pack != "shell" // a TUI agent, not a program in a shell
	return agent && !(live && l.RecordLive(rt.RuntimeID)) && p.deps.Gates.Readiness(rt) == nudge.Busy
}

// signalRecord is the ack signal of a prompt found in the agent's own record
// (ack.SignalRecord).
const signalRecord = "record"

// evidencer is an Acker that knows where it saw an ack (the record's file and line).
type evidencer interface {
	Evidence(triggerID string) string
}

// ackTimedOut is the end of an ack wait without an ack: the agent's record is read once
// more (a prompt found there is acked, never given again), a prompt handed over by a
// channel is withdrawn from the agent's queue, and next says: a retry after the next
// backoff, or the fallback chain. The reads run on the caller's goroutine (the ack
// wait's); what they found is applied by the end it returns, on j's lane.
func (p *Pipeline) ackTimedOut(j *job) func(*lane) {
	if sig, ok := inRecord(p.ctx, p.deps.Acks, j.record().RuntimeID, j.id()); ok {
		return func(*lane) { p.finishAcked(j, sig) }
	}
	w := p.withdraw(j)
	return func(l *lane) {
		w.apply(p, j)
		p.apply(l, j, nudge.Runtime{}, outcome{kind: oAckTimeout})
	}
}

// retry puts j back at the front of its lane, to be typed again after wait (an ack
// timeout with retries left).
func (p *Pipeline) retry(j *job, wait time.Duration) {
	rec := j.update(p.cfg.Now(), func(t *nudge.Trigger) { t.NextAttemptAt = tp(j.clocks.retryAt); t.Message = "no ack yet: retrying" })
	p.persist(j, p.auditDetail("trigger_retry", rec, "ack timeout", map[string]any{
		"attempt": rec.Attempts + 1, "backoff_ms": wait.Milliseconds()}))
	p.transition(rec.RuntimeID, nudge.StatusRetrying, "ack timeout for "+rec.TriggerID)
	p.laneFor(rec.RuntimeID).push(j, true)
}

// ackWaitAgain: the pane drew after an unshown hold; the agent is showing the prompt it
// took only now, so the wait for its ack starts again from now (clocks.ackFrom).
func (p *Pipeline) ackWaitAgain(j *job) {
	rec := j.update(p.cfg.Now(), func(t *nudge.Trigger) {
		t.State = nudge.StateSubmitted
		j.settleCause(t, "the agent drew after it took the prompt: waiting for its ack again")
		t.DeferredUntil, t.NextAttemptAt = nil, nil
		t.Result = resultFor(t)
	})
	p.persist(j, p.audit("trigger_ack_wait", rec, rec.Message))
	p.transition(rec.RuntimeID, nudge.StatusAwaitingAck, "trigger "+rec.TriggerID)
	p.goAwaitAck(j)
}

// retryAfter says whether a trigger delivered `attempts` times without an ack gets
// another attempt, and the backoff before it (the last Backoff entry repeats).
func retryAfter(attempts, retries int, backoff []time.Duration) (time.Duration, bool) {
	if attempts > retries {
		return 0, false
	}
	if len(backoff) == 0 || attempts < 1 {
		return 0, true
	}
	return backoff[min(attempts-1, len(backoff)-1)], true
}

// finishAcked records j's ack (the Acker's signal, the marker found on screen, or an ack
// found before a retry) and closes it.
func (p *Pipeline) finishAcked(j *job, signal string) {
	p.fb.mu.Lock()
	for rt, l := range p.fb.launched {
		if l.trigger == j.id() {
			delete(p.fb.launched, rt) // its fallback launch took the prompt: the pane is the runtime's again
		}
	}
	p.fb.mu.Unlock()
	if signal == signalRecord {
		// Its user message is in the agent's record, but the agent may still be taking it
		// in (Gemini CLI reads a large paste for seconds after writing it): the next
		// trigger keeps waiting until the agent shows it, as the intake gate says, or
		// until the turn's end in the record (Reply).
		j.keepIntake = true
	} else if in, ok := p.deps.Gates.(Intake); ok {
		// Before the receipt says acked: a caller that sends the next trigger as soon as it
		// reads acked must not find the agent still taking this one in.
		in.Settled(j.record().RuntimeID, j.id())
	}
	now := p.cfg.Now()
	rec := j.update(now, func(t *nudge.Trigger) {
		t.State = nudge.StateAcked
		t.AckedAt, t.DeliveredAt = tp(now), tp(now) // delivered means acknowledged
		t.AckSignal = signal
		t.NextAttemptAt = nil
		t.Closed = true
		t.Result = resultFor(t)
	})
	ackRec := p.audit("ack_received", rec, signal)
	if e, ok := p.deps.Acks.(evidencer); ok {
		if ev := e.Evidence(rec.TriggerID); ev != "" {
			ackRec.Detail = mustJSON(map[string]string{"evidence": ev})
		}
	}
	p.persist(j, ackRec)
	if p.gate.breakers.success(rec.RuntimeID) {
		p.breakerChanged(rec.RuntimeID, "", time.Time{})
	}
	// The runtime's transition is queued before the flush so that it goes in the same
	// commit (one fsync per closed trigger, not two).
	p.transition(rec.RuntimeID, nudge.StatusReady, "ack for "+rec.TriggerID)
	// An ack is made durable at once, not with the next write-behind batch: a kill -9 in
	// between would leave the restarted daemon an answered prompt in `submitted`, and its
	// retry could type it again into an agent whose marker has left the pane (a relaunch).
	p.deps.Store.Flush()
	p.done(j)
}

func (p *Pipeline) finishFailed(j *job, code nudge.Code, why string) {
	p.countFailure(j, code)
	now := p.cfg.Now()
	rec := j.update(now, func(t *nudge.Trigger) {
		t.State = nudge.StateFailed
		t.FailedAt = tp(now)
		t.ErrorCode, t.Message = code, why
		t.Closed = true
		t.Result = resultFor(t)
	})
	j.markDecided()
	if rt, ok := p.deps.Runtimes.Get(rec.RuntimeID); ok && rec.Fallback != "" && waitingOn(rt.Status) {
		// The runtime a fallback launched did not take the prompt typed into it: it is
		// the runtime's program now, waiting for the next trigger, not for this one.
		p.transition(rec.RuntimeID, nudge.StatusReady, "trigger "+rec.TriggerID+" failed")
	}
	p.persist(j, p.audit("trigger_failed", rec, why))
	p.done(j)
}

// startFallback hands j to the fallback chain in its own goroutine.
func (p *Pipeline) startFallback(j *job, code nudge.Code, why string) {
	if j.record().Attempts > 0 || j.maybeTyped {
		// It may have reached the agent: a prompt its record holds is not given again.
		if sig, ok := inRecord(p.ctx, p.deps.Acks, j.record().RuntimeID, j.id()); ok {
			p.finishAcked(j, sig)
			return
		}
	}
	p.countFailure(j, code)
	if p.deps.Fallback == nil {
		p.finishFailed(j, code, why)
		return
	}
	keep := p.paneTaken(j.record().RuntimeID, j.id())
	if rt, ok := p.asideFor(j.record().RuntimeID, code, keep); ok && j.record().Fallback == "" {
		// An earlier fallback already spawned a runtime beside this one: deliver there
		// instead of spawning one runtime per trigger.
		j.update(p.cfg.Now(), func(*nudge.Trigger) { j.cause.code, j.cause.why = code, why })
		p.deliverTo(j, rt.RuntimeID, rt.PaneID, nudge.BackendSpawn, "fallback_redirect",
			string(code)+": "+why+"; delivering to "+rt.RuntimeID+", spawned beside it by an earlier fallback")
		return
	}
	if t := j.record(); t.Fallback != "" {
		// Its fallback already relaunched the runtime and the live delivery to the fresh
		// one failed too: no second relaunch for the same trigger.
		p.finishFailed(j, code, why+" (after the fallback "+t.Fallback+")")
		return
	}
	now := p.cfg.Now()
	rt := j.record().RuntimeID
	if !p.beginFallback(rt) {
		// Another trigger's fallback is relaunching this runtime: wait for it, then go
		// through the gates again (the relaunched agent may take this one live).
		j.clocks.retryAt = now.Add(fallbackWait)
		p.markDeferred(j, verdict{kind: hold, code: nudge.FallbackInProgress, why: "waiting for the runtime's fallback relaunch", until: j.clocks.retryAt}, now)
		p.laneFor(rt).push(j, true)
		return
	}
	rec := j.update(now, func(t *nudge.Trigger) {
		t.ErrorCode, t.Message = code, why
		j.cause.code, j.cause.why = code, why
	})
	j.markDecided()
	p.persist(j, p.audit("fallback_required", rec, why))
	p.goOwned(func() {
		defer p.endFallback(rt) // after its end is posted: the lane applies that first
		if end := p.runFallback(j, code, keep); end != nil {
			p.post(j, end)
		}
	})
}

// paneLaunch is a fallback launch that holds a trigger's prompt in a runtime's own pane.
type paneLaunch struct {
	trigger string
	at      time.Time
}

// paneTaken reports whether runtimeID's pane runs another trigger's fallback launch that
// is not acked yet (within MaxHold): a fallback for trigger id must then keep the pane.
func (p *Pipeline) paneTaken(runtimeID, id string) bool {
	p.fb.mu.Lock()
	defer p.fb.mu.Unlock()
	l, ok := p.fb.launched[runtimeID]
	return ok && l.trigger != id && p.cfg.Now().Sub(l.at) < p.cfg.MaxHold
}

// fallbackWait is how often a trigger held behind another's fallback looks again.
const fallbackWait = 250 * time.Millisecond

// fallbackTimeout bounds a whole fallback chain (its launches wait a short grace each; a
// tmux that stops answering must not hold the trigger, and those behind it, for good).
const fallbackTimeout = 5 * time.Minute

// beginFallback claims the runtime for one fallback chain at a time ("" never conflicts).
func (p *Pipeline) beginFallback(runtimeID string) bool {
	if runtimeID == "" {
		return true
	}
	p.fb.mu.Lock()
	defer p.fb.mu.Unlock()
	if p.fb.fallingBack[runtimeID] {
		return false
	}
	p.fb.fallingBack[runtimeID] = true
	return true
}

func (p *Pipeline) endFallback(runtimeID string) {
	if runtimeID == "" {
		return
	}
	p.fb.mu.Lock()
	delete(p.fb.fallingBack, runtimeID)
	p.fb.mu.Unlock()
	p.kick(runtimeID)
}

// runFallback runs j's fallback chain (its launches, in the chain's goroutine) and
// returns its end for j's lane to apply: the trigger closed (fell back or failed) or
// moved to a lane for a live delivery; nil when the pipeline is closing.
func (p *Pipeline) runFallback(j *job, code nudge.Code, keep bool) func(*lane) {
	from := j.record().RuntimeID
	ctx, cancel := context.WithTimeout(p.ctx, fallbackTimeout)
	l, err := p.deps.Fallback.Fallback(ctx, j.record(), code, keep)
	cancel()
	if p.ctx.Err() != nil {
		return nil
	}
	if err == nil && l.RuntimeID != "" {
		p.fb.mu.Lock()
		if l.RuntimeID != from {
			p.fb.aside[from] = l.RuntimeID
			p.usedAsideLocked(l.RuntimeID)
		} else {
			// The launch in the runtime's own pane is for this trigger's prompt (given
			// at launch, or typed live next): another trigger's fallback keeps that pane.
			p.fb.launched[from] = paneLaunch{trigger: j.id(), at: p.cfg.Now()}
		}
		p.fb.mu.Unlock()
	}
	if err == nil && !l.Given {
		if l.RuntimeID == "" {
			return func(*lane) {
				p.finishFailed(j, nudge.SpawnFailed, "fresh runtime started without the prompt and no runtime to deliver it to")
			}
		}
		// The launched runtime is up but has not got the prompt (none goes on a command
		// line): it goes through the gates again and is typed into that runtime's pane
		// (never the old one's, unless the launch took the old one's place) once that is
		// ready. Only once: another failure of that delivery ends the trigger
		// (startFallback).
		return func(*lane) {
			p.deliverTo(j, l.RuntimeID, l.PaneID, l.Backend, "fallback_deliver_live",
				"runtime "+l.RuntimeID+" (pane "+l.PaneID+", "+l.Backend+") started without the prompt: delivering it live there")
		}
	}
	if err != nil {
		fc := nudge.ResumeFailed
		var ne *nudge.Error
		if errors.As(err, &ne) {
			fc = ne.Code
		}
		return func(*lane) { p.finishFailed(j, fc, err.Error()) }
	}
	return func(*lane) { p.fellBack(j, l) }
}

// fellBack closes j, whose fallback launch took its prompt (launch l).
func (p *Pipeline) fellBack(j *job, l nudge.Launched) {
	now := p.cfg.Now()
	rec := j.update(now, func(t *nudge.Trigger) {
		t.State = nudge.StateSubmitted
		t.SubmittedAt, t.DeliveredAt = tp(now), tp(now)
		t.DeliveryBackend, t.Fallback = l.Backend, l.Backend
		t.FallbackRuntimeID, t.FallbackPane = l.RuntimeID, l.PaneID
		t.Closed = true
		t.Result = resultFor(t)
	})
	p.lastTrigger(rec)
	p.persist(j, p.auditDetail("trigger_fell_back", rec, l.Backend, map[string]any{
		"backend": l.Backend, "runtime_id": l.RuntimeID, "pane_id": l.PaneID}))
	p.done(j)
}

// deliverTo moves j to runtime id's lane for a live delivery there (a fresh runtime a
// fallback started without the prompt, or the runtime an earlier fallback spawned beside
// a kept pane). The receipt names the runtime and its pane.
func (p *Pipeline) deliverTo(j *job, id, pane, backend, event, why string) {
	now := p.cfg.Now()
	old := j.record().RuntimeID
	if old != id {
		if p.deps.Acks != nil {
			p.deps.Acks.Forget(j.id()) // its ack comes from the new runtime's pane
		}
		p.gate.breakers.settle(old, j.id())
	}
	rec := j.update(now, func(t *nudge.Trigger) {
		t.Fallback, t.FallbackRuntimeID, t.FallbackPane = backend, id, pane
		if t.RuntimeID != id {
			// Not handed to the new runtime yet: what it writes (its record, a heartbeat)
			// speaks of this trigger only once it is typed there (HandedTo, Tracker.Expect).
			t.InjectedAt, t.SubmittedAt = nil, nil
		}
		t.RuntimeID = id
		t.Message = why
	})
	p.persist(j, p.auditDetail(event, rec, why, map[string]any{"from_runtime_id": old, "runtime_id": id, "pane_id": pane}))
	j.maybeTyped = true
	j.clocks.retryAt, j.clocks.paneHold, j.clocks.deferStart, j.clocks.holdStart = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	p.laneFor(id).push(j, true)
}

// asideFor returns the live runtime an earlier fallback spawned beside runtimeID, if the
// cause is one that keeps runtimeID's pane (or keep says it must be kept).
func (p *Pipeline) asideFor(runtimeID string, code nudge.Code, keep bool) (nudge.Runtime, bool) {
	switch code {
	case nudge.DeferTimeout, nudge.OperatorBusy, nudge.UnmanagedRuntime:
	default:
		if !keep {
			return nudge.Runtime{}, false
		}
	}
	p.fb.mu.Lock()
	id := p.fb.aside[runtimeID]
	p.fb.mu.Unlock()
	if rt, ok := p.deps.Runtimes.Get(id); ok && id != "" && rt.Managed && panes.Live(rt.Status) && p.useAside(id) {
		return rt, true
	}
	// After a daemon restart: the newest live runtime named ROLE-fb-* in the workspace.
	from, ok := p.deps.Runtimes.Get(runtimeID)
	l, canList := p.deps.Runtimes.(interface{ List() []nudge.Runtime })
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
	if best.RuntimeID == "" || !p.useAside(best.RuntimeID) {
		return nudge.Runtime{}, false
	}
	return best, true
}

// useAside claims fallback runtime id for a trigger, unless it is being collected.
func (p *Pipeline) useAside(id string) bool {
	p.fb.mu.Lock()
	defer p.fb.mu.Unlock()
	if p.fb.retiring[id] {
		return false
	}
	p.usedAsideLocked(id)
	return true
}

// unroutable handles a trigger with no managed runtime: an unknown one fails with
// UNMANAGED_RUNTIME (the caller must fall back itself); a registered but unmanaged one
// goes straight to the fallback chain.
func (p *Pipeline) unroutable(j *job, known bool) {
	if known {
		p.startFallback(j, nudge.UnmanagedRuntime, "runtime is not managed: live delivery skipped")
		return
	}
	t := j.record()
	p.finishFailed(j, nudge.UnmanagedRuntime, "no managed runtime "+t.WorkspaceID+"/"+t.Agent+": fallback required")
}

// done forgets a closed job once its last write is in the store (until then Get keeps
// answering from memory, so a receipt never goes back to an older state).
func (p *Pipeline) done(j *job) {
	p.gate.breakers.settle(j.record().RuntimeID, j.id())
	if in, ok := p.deps.Gates.(Intake); ok && !j.keepIntake {
		in.Settled(j.record().RuntimeID, j.id())
	}
	if p.deps.Acks != nil {
		p.deps.Acks.Forget(j.id())
	}
	p.goOwned(func() {
		p.deps.Store.Settle() // with the next batch: no commit of its own
		p.forget(j)
	})
	p.collectAside(j.record().RuntimeID) // a fallback runtime whose prompt is done
}

func uidPtr(uid int) *int {
	if uid < 0 {
		return nil
	}
	return &uid
}

// ackAfterFallback records an ack for a trigger whose live path ended in a fallback
// launch (the resumed agent acknowledged it). Other triggers are acked through Acker.
func (p *Pipeline) ackAfterFallback(id, signal string) (nudge.Trigger, bool, error) {
	p.deps.Store.Flush() // the fallback's own write-behind record first
	t, err := p.deps.Store.Triggers().UpdateTrigger(id, func(t *nudge.Trigger) error {
		if t.Fallback == "" || t.State != nudge.StateSubmitted {
			return errNotFallback
		}
		now := p.cfg.Now()
		t.State, t.AckedAt, t.AckSignal, t.UpdatedAt = nudge.StateAcked, &now, signal, now
		t.Result = resultFor(t)
		return nil
	})
	if errors.Is(err, errNotFallback) {
		return nudge.Trigger{}, false, nil
	}
	if err == nil {
		p.logOutcome(t) // acked after its fallback launch closed it: the outcome as it ends
		p.changed(t)
		p.fb.mu.Lock()
		for rt, l := range p.fb.launched {
			if l.trigger == id {
				delete(p.fb.launched, rt)
			}
		}
		p.fb.mu.Unlock()
	}
	return t, err == nil, err
}

// waitingOn reports whether a runtime's status says it waits on a trigger's delivery.
func waitingOn(s nudge.Status) bool {
	return s == nudge.StatusTriggering || s == nudge.StatusAwaitingAck || s == nudge.StatusRetrying
}
