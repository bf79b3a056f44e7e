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

// usedAside records that a trigger is handed to the fallback runtime id now (under f.mu):
// a collection waits AsideIdle after the last use.
func (f *finisher) usedAsideLocked(id string) {
	f.asides[id] = f.cfg.Now()
}

// collectAsidesLeft starts the collection of the live fallback runtimes (ROLE-fb-*) an
// earlier daemon left: their prompts may be done, and no trigger of this one would start
// it. One a trigger is still in flight for waits for it.
func (f *finisher) collectAsidesLeft() {
	l, ok := f.deps.Runtimes.(interface{ List() []nudge.Runtime })
	if !ok {
		return
	}
	now := f.cfg.Now()
	all := l.List()
	for _, rt := range all {
		if !rt.Managed || !panes.Live(rt.Status) || !spawnedBeside(rt, all) {
			continue
		}
		f.mu.Lock()
		if _, known := f.asides[rt.RuntimeID]; !known {
			f.asides[rt.RuntimeID] = now
		}
		f.mu.Unlock()
		f.collectAside(rt.RuntimeID)
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
func (f *finisher) collectAside(id string) {
	if _, ok := f.deps.Runtimes.(asideStopper); !ok {
		return
	}
	f.mu.Lock()
	_, spawned := f.asides[id]
	if !spawned || f.collecting[id] {
		f.mu.Unlock()
		return
	}
	f.collecting[id] = true
	f.mu.Unlock()
	f.goOwned(func() {
		defer func() {
			f.mu.Lock()
			delete(f.collecting, id)
			f.mu.Unlock()
		}()
		f.awaitAsideDone(id)
	})
}

// awaitAsideDone polls fallback runtime id until it has been done for AsideIdle, then
// stops and deregisters it. It gives up when the runtime is gone, or work comes for it
// (that work's close starts a collection again).
func (f *finisher) awaitAsideDone(id string) {
	var doneSince time.Time
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-time.After(f.cfg.DeferRecheck):
		}
		rt, ok := f.deps.Runtimes.Get(id)
		if !ok || !panes.Live(rt.Status) {
			f.forgetAside(id)
			return
		}
		if f.asideWorking(rt) {
			if f.asideInFlight(id) {
				return
			}
			doneSince = time.Time{}
			continue
		}
		now := f.cfg.Now()
		if doneSince.IsZero() {
			doneSince = now
		}
		if now.Sub(doneSince) >= f.cfg.AsideIdle && f.retireAside(id, now) {
			f.stopAside(id)
			return
		}
	}
}

// asideWorking reports whether fallback runtime rt still has work: a trigger in flight
// for it, a screen that is not READY, a person at its pane.
func (f *finisher) asideWorking(rt nudge.Runtime) bool {
	if rt.Status != nudge.StatusReady || f.asideInFlight(rt.RuntimeID) {
		return true
	}
	if g := f.deps.Gates; g != nil {
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
func (f *finisher) asideInFlight(id string) bool {
	f.core.mu.Lock()
	defer f.core.mu.Unlock()
	for _, j := range f.jobs {
		if t := j.record(); t.RuntimeID == id && !t.Closed {
			return true
		}
	}
	return false
}

// retireAside takes fallback runtime id out of reuse, unless a trigger was handed to it
// within AsideIdle or one is in flight for it (then false).
func (f *finisher) retireAside(id string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now.Sub(f.asides[id]) < f.cfg.AsideIdle || f.asideInFlight(id) {
		return false
	}
	f.retiring[id] = true
	for from, to := range f.aside {
		if to == id {
			delete(f.aside, from)
		}
	}
	return true
}

// stopAside ends fallback runtime id's program and drops its record.
func (f *finisher) stopAside(id string) {
	st := f.deps.Runtimes.(asideStopper)
	ctx, cancel := context.WithTimeout(f.ctx, asideStopTimeout)
	defer cancel()
	const why = "fallback runtime collected: its prompts are done"
	if err := st.Stop(ctx, id, why); err != nil {
		f.log.Warn("collect fallback runtime: stop", "runtime_id", id, "err", err)
		f.forgetAside(id)
		return
	}
	if err := st.Deregister(ctx, id, why); err != nil {
		f.log.Warn("collect fallback runtime: deregister", "runtime_id", id, "err", err)
	}
	f.forgetAside(id)
}

func (f *finisher) forgetAside(id string) {
	f.mu.Lock()
	delete(f.asides, id)
	delete(f.retiring, id)
	for from, to := range f.aside {
		if to == id {
			delete(f.aside, from)
		}
	}
	f.mu.Unlock()
}
