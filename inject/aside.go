package inject

import (
	"context"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/panes"
)

// A fallback that must keep a runtime's pane (unmanaged, the user's own, an agent stuck
// past the max hold) spawns a managed runtime beside it (ROLE-fb-SUFFIX) and types the
// prompt there. That runtime is a second agent session: once its prompts are done —
// nothing in flight for it, its screen READY, no person at it — and it has stayed so for
// AsideIdle (long enough for the next fallback of the same runtime to reuse it), it is
// stopped and deregistered, each step audited by the registry. It never lingers until
// someone deregisters it by hand.

// asideStopper is what collecting a fallback runtime needs of the registry
// (*panes.Registry).
type asideStopper interface {
	Stop(ctx context.Context, id, reason string) error
	Deregister(ctx context.Context, id, reason string) error
}

// asideStopTimeout bounds a collection's stop and deregister.
const asideStopTimeout = 2 * time.Minute

// usedAside records that a trigger is handed to the fallback runtime id now (under p.fb.mu):
// a collection waits AsideIdle after the last use.
func (p *Pipeline) usedAsideLocked(id string) {
	p.fb.asides[id] = p.cfg.Now()
}

// collectAsidesLeft starts the collection of the live fallback runtimes (ROLE-fb-*) an
// earlier daemon left: their prompts may be done, and no trigger of this one would start
// it. One a trigger is still in flight for waits for it.
func (p *Pipeline) collectAsidesLeft() {
	l, ok := p.deps.Runtimes.(interface{ List() []nudge.Runtime })
	if !ok {
		return
	}
	now := p.cfg.Now()
	all := l.List()
	for _, rt := range all {
		if !rt.Managed || !panes.Live(rt.Status) || !spawnedBeside(rt, all) {
			continue
		}
		p.fb.mu.Lock()
		if _, known := p.fb.asides[rt.RuntimeID]; !known {
			p.fb.asides[rt.RuntimeID] = now
		}
		p.fb.mu.Unlock()
		p.collectAside(rt.RuntimeID)
	}
}

// spawnedBeside reports whether rt is named as a fallback names the runtime it spawns
// beside another (SpawnAside: ROLE-fb-SUFFIX, with that runtime's agent_id): one of all
// has the same agent_id and rt's role begins with its role and the marker.
func spawnedBeside(rt nudge.Runtime, all []nudge.Runtime) bool {
	if !strings.Contains(rt.Role, panes.AsideMarker) || rt.AgentID == rt.Role {
		return false
	}
	for _, o := range all {
		if o.RuntimeID != rt.RuntimeID && o.WorkspaceID == rt.WorkspaceID && o.AgentID == rt.AgentID &&
			strings.HasPrefix(rt.Role, o.Role+panes.AsideMarker) {
			return true
		}
	}
	return false
}

// collectAside starts the collection of fallback runtime id once a trigger it held
// closed; one collection per runtime at a time.
func (p *Pipeline) collectAside(id string) {
	if _, ok := p.deps.Runtimes.(asideStopper); !ok {
		return
	}
	p.fb.mu.Lock()
	_, spawned := p.fb.asides[id]
	if !spawned || p.fb.collecting[id] {
		p.fb.mu.Unlock()
		return
	}
	p.fb.collecting[id] = true
	p.fb.mu.Unlock()
	p.goOwned(func() {
		defer func() {
			p.fb.mu.Lock()
			delete(p.fb.collecting, id)
			p.fb.mu.Unlock()
		}()
		p.awaitAsideDone(id)
	})
}

// awaitAsideDone polls fallback runtime id until it has been done for AsideIdle, then
// stops and deregisters it. It gives up when the runtime is gone, or work comes for it
// (that work's close starts a collection again).
func (p *Pipeline) awaitAsideDone(id string) {
	var doneSince time.Time
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-time.After(p.cfg.DeferRecheck):
		}
		rt, ok := p.deps.Runtimes.Get(id)
		if !ok || !panes.Live(rt.Status) {
			p.forgetAside(id)
			return
		}
		if p.asideWorking(rt) {
			if p.asideInFlight(id) {
				return
			}
			doneSince = time.Time{}
			continue
		}
		now := p.cfg.Now()
		if doneSince.IsZero() {
			doneSince = now
		}
		if now.Sub(doneSince) >= p.cfg.AsideIdle && p.retireAside(id, now) {
			p.stopAside(id)
			return
		}
	}
}

// asideWorking reports whether fallback runtime rt still has work: a trigger in flight
// for it, a screen that is not READY, a person at its pane.
func (p *Pipeline) asideWorking(rt nudge.Runtime) bool {
	if rt.Status != nudge.StatusReady || p.asideInFlight(rt.RuntimeID) {
		return true
	}
	if g := p.deps.Gates; g != nil {
		if g.Readiness(rt) != nudge.Ready {
			return true
		}
		if busy, _, _ := g.Collision(rt); busy {
			return true
		}
	}
	return false
}

// asideInFlight reports whether a trigger not closed is addressed to runtime id.
func (p *Pipeline) asideInFlight(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, j := range p.jobs {
		if t := j.record(); t.RuntimeID == id && !t.Closed {
			return true
		}
	}
	return false
}

// retireAside takes fallback runtime id out of reuse, unless a trigger was handed to it
// within AsideIdle or one is in flight for it (then false).
func (p *Pipeline) retireAside(id string, now time.Time) bool {
	p.fb.mu.Lock()
	defer p.fb.mu.Unlock()
	if now.Sub(p.fb.asides[id]) < p.cfg.AsideIdle || p.asideInFlight(id) {
		return false
	}
	p.fb.retiring[id] = true
	for from, to := range p.fb.aside {
		if to == id {
			delete(p.fb.aside, from)
		}
	}
	return true
}

// stopAside ends fallback runtime id's program and drops its record.
func (p *Pipeline) stopAside(id string) {
	st := p.deps.Runtimes.(asideStopper)
	ctx, cancel := context.WithTimeout(p.ctx, asideStopTimeout)
	defer cancel()
	const why = "fallback runtime collected: its prompts are done"
	if err := st.Stop(ctx, id, why); err != nil {
		p.log.Warn("collect fallback runtime: stop", "runtime_id", id, "err", err)
		p.forgetAside(id)
		return
	}
	if err := st.Deregister(ctx, id, why); err != nil {
		p.log.Warn("collect fallback runtime: deregister", "runtime_id", id, "err", err)
	}
	p.forgetAside(id)
}

func (p *Pipeline) forgetAside(id string) {
	p.fb.mu.Lock()
	delete(p.fb.asides, id)
	delete(p.fb.retiring, id)
	for from, to := range p.fb.aside {
		if to == id {
			delete(p.fb.aside, from)
		}
	}
	p.fb.mu.Unlock()
}
