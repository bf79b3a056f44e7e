package inject

import (
	"sync"
	"time"

	"github.com/nudgehq/nudge"
)

// After a human intervened in a worker's pane, the orchestrator gets a sync trigger
// "before autonomous flow continues" (seed 000 §13.2, seed 001 §4.1): the worker's
// triggers wait (ORCHESTRATOR_SYNC) until the orchestrator took that trigger (submitted or
// acked), or it closed, or MaxHold passed since the hold began. Forced triggers and the
// sync trigger itself are not held.

// syncHolds are the workers held for an orchestrator's sync, by runtime id.
type syncHolds struct {
	mu sync.Mutex
	m  map[string]syncHold
}

type syncHold struct {
	trigger string    // the sync trigger the orchestrator must take
	since   time.Time // when the hold began
}

// syncPoll is how often a held worker's lane looks at the sync trigger again.
const syncPoll = 250 * time.Millisecond

// HoldForSync holds the triggers of runtime runtimeID until the orchestrator took
// trigger syncID (a later hold for the same runtime replaces an earlier one).
func (p *Pipeline) HoldForSync(runtimeID, syncID string) {
	p.lanes.syncs.mu.Lock()
	if p.lanes.syncs.m == nil {
		p.lanes.syncs.m = map[string]syncHold{}
	}
	p.lanes.syncs.m[runtimeID] = syncHold{trigger: syncID, since: p.cfg.Now()}
	p.lanes.syncs.mu.Unlock()
}

// ReleaseSync lifts the hold of runtimeID for syncID (the sync trigger was refused).
func (p *Pipeline) ReleaseSync(runtimeID, syncID string) {
	p.lanes.syncs.mu.Lock()
	if h, ok := p.lanes.syncs.m[runtimeID]; ok && h.trigger == syncID {
		delete(p.lanes.syncs.m, runtimeID)
	}
	p.lanes.syncs.mu.Unlock()
	p.lanes.kick(runtimeID)
}

// syncGate holds j while its runtime waits for an orchestrator's sync.
func (ls *lanes) syncGate(j *job, rt nudge.Runtime, now time.Time) (verdict, bool) {
	ls.syncs.mu.Lock()
	h, ok := ls.syncs.m[rt.RuntimeID]
	ls.syncs.mu.Unlock()
	if !ok || h.trigger == j.id() {
		return verdict{}, false
	}
	end := h.since.Add(ls.cfg.MaxHold)
	if ls.syncTaken(h, now) || !now.Before(end) {
		ls.syncs.mu.Lock()
		if cur, ok := ls.syncs.m[rt.RuntimeID]; ok && cur == h {
			delete(ls.syncs.m, rt.RuntimeID)
		}
		ls.syncs.mu.Unlock()
		return verdict{}, false
	}
	return verdict{kind: hold, code: nudge.OrchestratorSync, until: end, poll: syncPoll,
		why: "a human intervened in this pane: waiting for the orchestrator to take sync trigger " + h.trigger}, true
}

// syncTaken reports whether h's sync trigger reached the orchestrator (submitted or
// acked) or closed (failed: nothing more to wait for). One still unknown is being
// submitted (HoldForSync comes first); unknown after syncSubmitGrace, it never will be.
func (ls *lanes) syncTaken(h syncHold, now time.Time) bool {
	var t nudge.Trigger
	if j := ls.inflight(h.trigger); j != nil {
		t = j.record()
	} else if st, err := ls.deps.Store.Triggers().GetTrigger(h.trigger); err == nil {
		t = st
	} else {
		return now.Sub(h.since) >= syncSubmitGrace
	}
	return t.Closed || t.State == nudge.StateSubmitted || t.State == nudge.StateAcked
}

// syncSubmitGrace bounds how long a hold waits for its sync trigger to be accepted.
const syncSubmitGrace = 10 * time.Second
