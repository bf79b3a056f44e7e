package inject

import (
	"sync"
	"time"

	"github.com/nudgehq/nudge"
)

// Breaker states as shown on the runtime record ("" is closed).
const (
	BreakerOpen     = "open"      // cooling down: triggers wait (RUNTIME_COOLDOWN)
	BreakerHalfOpen = "half_open" // the cooldown is over: one probe trigger goes, the rest wait for its outcome
)

// breakers is a circuit breaker per runtime (seed 000 §14: cooldown after repeated
// failures). Failures consecutive triggers whose live delivery failed (no ack after the
// retries, or a send-keys error) open it for Cooldown: the runtime is not typed into
// again meanwhile. After the cooldown it is half-open: the first trigger to pass the
// gates probes it; an ack closes it, another failure opens it again for twice the last
// cooldown (at most 16x Cooldown). Failures < 0 turns it off.
//
// Its methods report a change of a breaker's state; the pipeline shows it on the
// runtime's record (breakerChanged).
type breakers struct {
	failures int
	cooldown time.Duration

	mu sync.Mutex
	m  map[string]*breaker
}

type breaker struct {
	fails int           // consecutive failed triggers
	state string        // "", open, half_open
	until time.Time     // open: the end of the cooldown
	cool  time.Duration // the current cooldown
	probe string        // half_open: the trigger probing the runtime
}

func newBreakers(failures int, cooldown time.Duration) *breakers {
	return &breakers{failures: failures, cooldown: cooldown, m: map[string]*breaker{}}
}

// view returns the runtime's breaker as the gates read it (decide).
func (b *breakers) view(runtimeID string) breakerView {
	if b.failures < 0 {
		return breakerView{off: true}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.m[runtimeID]
	if br == nil {
		return breakerView{}
	}
	return breakerView{state: br.state, until: br.until, probe: br.probe}
}

// breakerFailure reports whether a live-path failure code counts against the runtime.
func breakerFailure(code nudge.Code) bool {
	return code == nudge.AckTimeout || code == nudge.SendKeysError
}

// admit reports whether the runtime's breaker holds trigger id now, until when and why.
// An open breaker whose cooldown is over goes half-open with id as its probe (halfOpen).
func (b *breakers) admit(runtimeID, id string, now time.Time) (until time.Time, why string, held, halfOpen bool) {
	if b.failures < 0 {
		return time.Time{}, "", false, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.m[runtimeID]
	if br == nil || br.state == "" {
		return time.Time{}, "", false, false
	}
	switch {
	case br.state == BreakerOpen && now.Before(br.until):
		return br.until, "runtime cooling down after repeated failed triggers", true, false
	case br.state == BreakerOpen:
		br.state, br.probe = BreakerHalfOpen, id
		return time.Time{}, "", false, true
	case br.probe == "" || br.probe == id:
		br.probe = id
		return time.Time{}, "", false, false
	}
	return time.Time{}, "runtime half-open after a cooldown: waiting for probe trigger " + br.probe, true, false
}

// fail counts a trigger whose live delivery failed; it reports whether that opened the
// breaker, and until when.
func (b *breakers) fail(runtimeID, id string, now time.Time) (bool, time.Time) {
	if b.failures < 0 || runtimeID == "" {
		return false, time.Time{}
	}
	b.mu.Lock()
	br := b.m[runtimeID]
	if br == nil {
		br = &breaker{}
		b.m[runtimeID] = br
	}
	br.fails++
	open := false
	switch {
	case br.state == BreakerHalfOpen:
		br.cool = min(2*br.cool, 16*b.cooldown)
		open = true
	case br.state == "" && br.fails >= b.failures:
		br.cool = b.cooldown
		open = true
	}
	var until time.Time
	if open {
		br.state, br.probe = BreakerOpen, ""
		br.until = now.Add(br.cool)
		until = br.until
	}
	b.mu.Unlock()
	return open, until
}

// success closes the runtime's breaker (an acked trigger) and reports whether it was
// open or half-open.
func (b *breakers) success(runtimeID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.m[runtimeID]
	if br == nil {
		return false
	}
	delete(b.m, runtimeID)
	return br.state != ""
}

// settle frees the half-open probe slot of a trigger that ended neither acked nor
// failed against the runtime (deferred past its deadline, blocked, fell back).
func (b *breakers) settle(runtimeID, id string) {
	b.mu.Lock()
	if br := b.m[runtimeID]; br != nil && br.probe == id {
		br.probe = ""
	}
	b.mu.Unlock()
}

// state returns the runtime's breaker state and, when open, the cooldown's end.
func (b *breakers) state(runtimeID string) (string, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if br := b.m[runtimeID]; br != nil {
		return br.state, br.until
	}
	return "", time.Time{}
}

// breakerChanged shows a breaker's state on its runtime's record and lets the runtime's
// lane look again (a closed or half-open breaker lets triggers go).
func (p *Pipeline) breakerChanged(runtimeID, state string, until time.Time) {
	_, err := p.deps.Runtimes.Update(runtimeID, func(rt *nudge.Runtime) {
		rt.Breaker, rt.CooldownUntil = state, nil
		if state == BreakerOpen {
			rt.CooldownUntil = tp(until)
		}
	})
	if err != nil {
		p.log.Debug("breaker state", "runtime_id", runtimeID, "err", err)
	}
	switch state {
	case BreakerOpen:
		p.log.Warn("runtime cooling down after repeated failed triggers", "runtime_id", runtimeID, "until", until)
		// Wake its lane at the cooldown's end, so the half-open probe goes then.
		p.goOwned(func() {
			t := time.NewTimer(max(until.Sub(p.cfg.Now()), 0))
			defer t.Stop()
			select {
			case <-p.ctx.Done():
			case <-t.C:
				p.kick(runtimeID)
			}
		})
	default:
		p.kick(runtimeID)
	}
}

// restoreBreakers takes open breakers back from the runtime records after a restart: a
// cooldown survives the daemon. A half-open one is open again until now (its probe is
// gone), so its next trigger probes.
func (p *Pipeline) restoreBreakers() {
	l, ok := p.deps.Runtimes.(interface{ List() []nudge.Runtime })
	if !ok || p.gate.breakers.failures < 0 {
		return
	}
	now := p.cfg.Now()
	for _, rt := range l.List() {
		if rt.Breaker == "" {
			continue
		}
		until := now
		if rt.CooldownUntil != nil && rt.CooldownUntil.After(now) {
			until = *rt.CooldownUntil
		}
		p.gate.breakers.mu.Lock()
		p.gate.breakers.m[rt.RuntimeID] = &breaker{fails: p.gate.breakers.failures, state: BreakerOpen, until: until, cool: p.gate.breakers.cooldown}
		p.gate.breakers.mu.Unlock()
	}
}

// countFailure counts j's live failure with code against its runtime's breaker, once per
// trigger.
func (p *Pipeline) countFailure(j *job, code nudge.Code) {
	if j.counted || !breakerFailure(code) {
		return
	}
	j.counted = true
	t := j.record()
	if opened, until := p.gate.breakers.fail(t.RuntimeID, t.TriggerID, p.cfg.Now()); opened {
		p.breakerChanged(t.RuntimeID, BreakerOpen, until)
	}
}
