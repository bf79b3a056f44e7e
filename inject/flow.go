package inject

import (
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// adopt registers a recovered job and queues it on its runtime's lane (or resumes its
// ack wait when it was already submitted).
func (p *Pipeline) adopt(j *job) {
	p.mu.Lock()
	p.jobs[j.id()] = j
	p.mu.Unlock()
	t := j.record()
	switch {
	case t.State == string(nudge.StateSubmitted) && t.Fallback == "":
		p.goAwaitAck(j)
	case t.RuntimeID == "":
		p.unroutable(j, false)
	default:
		p.enqueue(j)
	}
}

// enqueue puts j at the back of its runtime's lane, starting the lane if needed. A job
// that queues behind others has had its first decision: it waits its turn (Submit
// answers "queued" at once instead of waiting on the triggers ahead of it).
func (p *Pipeline) enqueue(j *job) {
	if behind := p.laneFor(j.t.RuntimeID).push(j, false); behind {
		j.decide()
	}
}

func (p *Pipeline) laneFor(id string) *lane {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.lanes[id]
	if !ok {
		l = newLane(id)
		p.lanes[id] = l
		if !p.closed {
			p.wg.Add(1)
			go p.runLane(l)
		}
	}
	return l
}

func (p *Pipeline) removeFromLane(j *job) {
	p.mu.Lock()
	l := p.lanes[j.t.RuntimeID]
	p.mu.Unlock()
	if l != nil {
		l.remove(j)
	}
}

// runLane delivers one runtime's triggers in order until the pipeline closes.
func (p *Pipeline) runLane(l *lane) {
	defer p.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := time.Duration(-1)
		if j := l.front(); j != nil {
			wait = p.step(l, j)
		}
		if wait == 0 {
			continue
		}
		if wait < 0 {
			wait = time.Hour
		}
		resetTimer(timer, wait)
		select {
		case <-p.ctx.Done():
			return
		case <-l.wake:
		case <-timer.C:
		}
	}
}

// verdict is a gate's decision for the job at the front of a lane.
type verdict struct {
	kind  int // proceed, hold, fail, fallback
	code  nudge.Code
	why   string
	until time.Time // hold: when to look again (zero: at the next recheck)
}

const (
	proceed = iota
	hold
	fail
	fallback
)

// step makes one decision for j and returns how long the lane should wait before the
// next one (0: go on at once).
func (p *Pipeline) step(l *lane, j *job) time.Duration {
	now := p.cfg.Now()
	if j.retryAt.After(now) {
		return j.retryAt.Sub(now)
	}
	rt, ok := p.deps.Runtimes.Get(l.id)
	if !ok {
		l.remove(j)
		p.startFallback(j, nudge.TargetNotFound, "runtime is no longer registered")
		return 0
	}
	v := p.gate(j, rt, now)
	switch v.kind {
	case hold:
		p.markDeferred(j, v, now)
		d := p.cfg.DeferRecheck
		if !v.until.IsZero() && v.until.Sub(now) < d {
			d = v.until.Sub(now)
		}
		return max(d, time.Millisecond)
	case fail:
		l.remove(j)
		p.finishFailed(j, v.code, v.why)
	case fallback:
		l.remove(j)
		p.startFallback(j, v.code, v.why)
	default:
		l.remove(j)
		p.deliver(l, j, rt)
	}
	return 0
}

// gate applies the gates in order: runtime alive, pause, loop guard, rate limit, human
// collision, readiness.
func (p *Pipeline) gate(j *job, rt store.Runtime, now time.Time) verdict {
	t := j.record()
	switch nudge.Status(rt.Status) {
	case nudge.StatusOffline, nudge.StatusFailed, nudge.StatusDeregistered, nudge.StatusExited:
		return verdict{kind: fallback, code: nudge.PaneDead, why: "runtime is " + rt.Status}
	case nudge.StatusStarting, nudge.StatusFallbackResume, nudge.StatusSpawnRecovery:
		return p.startingHold(rt, now)
	}
	if rt.Paused {
		return verdict{kind: hold, why: "triggers paused for this runtime"}
	}
	key := rateKey(t)
	if t.ThreadID != "" && t.ScheduleID == "" {
		if b, why := p.loops.blocked(key); b {
			return verdict{kind: fail, code: nudge.ThreadAutoBlocked, why: why}
		}
	}
	if ok, until := p.rate.check(key, now); !ok {
		return verdict{kind: hold, code: nudge.TriggerRateLimited, why: "rate limit reached", until: until}
	}
	if v, held := p.collision(j, t, rt, now); held {
		return v
	}
	return p.readiness(t, rt)
}

// startingHold holds a trigger for a runtime that cannot take one yet: still starting (its
// agent has not shown READY), or being relaunched by a fallback. Nothing is typed into it;
// the hold ends when it becomes ready, or, for a start, at its start deadline, when the
// registry fails the start and the trigger takes the fallback path.
func (p *Pipeline) startingHold(rt store.Runtime, now time.Time) verdict {
	v := verdict{kind: hold, why: "runtime is " + rt.Status + ": not ready for input yet"}
	if sd, ok := p.deps.Runtimes.(interface{ StartDeadline(string) time.Time }); ok {
		if until := sd.StartDeadline(rt.RuntimeID); until.After(now) {
			v.until = until
		}
	}
	return v
}

func (p *Pipeline) collision(j *job, t store.Trigger, rt store.Runtime, now time.Time) (verdict, bool) {
	if p.deps.Gates == nil || t.ForceOverride {
		return verdict{}, false
	}
	busy, until, why := p.deps.Gates.Collision(rt)
	if !busy {
		j.deferStart = time.Time{}
		return verdict{}, false
	}
	if j.deferStart.IsZero() {
		j.deferStart = now
	}
	limit := j.deferStart.Add(p.cfg.MaxDefer)
	if !now.Before(limit) {
		return verdict{kind: fallback, code: nudge.DeferTimeout, why: "operator busy past the max defer window: " + why}, true
	}
	if until.IsZero() || until.After(limit) {
		until = limit
	}
	return verdict{kind: hold, code: nudge.OperatorBusy, why: why, until: until}, true
}

func (p *Pipeline) readiness(t store.Trigger, rt store.Runtime) verdict {
	if p.deps.Gates == nil {
		return verdict{kind: proceed}
	}
	prof, _ := p.deps.Runtimes.Profile(rt.Agent)
	switch r := p.deps.Gates.Readiness(rt); r {
	case nudge.Busy, nudge.NeedsConfirmation:
		if prof.QueuesInput && r == nudge.Busy {
			return verdict{kind: proceed}
		}
		return verdict{kind: hold, why: "agent is " + string(r)}
	}
	return verdict{kind: proceed}
}

func rateKey(t store.Trigger) string {
	return t.WorkspaceID + "/" + t.Agent + "\x00" + t.ThreadID
}

// markDeferred records a hold; the store is written only when the reason changes.
func (p *Pipeline) markDeferred(j *job, v verdict, now time.Time) {
	prev := j.record()
	changed := prev.State != string(nudge.StateDeferred) || prev.ErrorCode != string(v.code) || prev.Message != v.why
	rec := j.update(now, func(t *store.Trigger) {
		if t.State != string(nudge.StateDeferred) {
			t.DeferredAt = tp(now)
		}
		t.State = string(nudge.StateDeferred)
		t.ErrorCode, t.Message = string(v.code), v.why
		if v.until.IsZero() {
			t.DeferredUntil = nil
		} else {
			t.DeferredUntil = tp(v.until)
		}
		t.Result = string(resultFor(t))
	})
	j.decide()
	if changed {
		p.persist(j, p.audit("trigger_deferred", rec, v.why))
	}
}
