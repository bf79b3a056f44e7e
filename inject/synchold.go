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
	p.gate.syncs.mu.Lock()
	if p.gate.syncs.m == nil {
		p.gate.syncs.m = map[string]syncHold{}
	}
	p.gate.syncs.m[runtimeID] = syncHold{trigger: syncID, since: p.cfg.Now()}
	p.gate.syncs.mu.Unlock()
}

// ReleaseSync lifts the hold of runtimeID for syncID (the sync trigger was refused).
func (p *Pipeline) ReleaseSync(runtimeID, syncID string) {
	p.gate.syncs.mu.Lock()
	if h, ok := p.gate.syncs.m[runtimeID]; ok && h.trigger == syncID {
		delete(p.gate.syncs.m, runtimeID)
	}
	p.gate.syncs.mu.Unlock()
	p.kick(runtimeID)
}

// syncView is the sync hold on runtimeID as decide reads it for trigger id (syncGate).
func (p *Pipeline) syncView(runtimeID, id string, now time.Time) syncView {
	p.gate.syncs.mu.Lock()
	h, ok := p.gate.syncs.m[runtimeID]
	p.gate.syncs.mu.Unlock()
	if !ok || h.trigger == id {
		return syncView{held: ok, h: h}
	}
	return syncView{held: true, h: h, taken: p.syncTaken(h, now)}
}

// drop ends the sync hold h on runtimeID, unless another replaced it meanwhile.
func (s *syncHolds) drop(runtimeID string, h syncHold) {
	s.mu.Lock()
	if cur, ok := s.m[runtimeID]; ok && cur == h {
		delete(s.m, runtimeID)
	}
	s.mu.Unlock()
}

// syncTaken reports whether h's sync trigger reached the orchestrator (submitted or
// acked) or closed (failed: nothing more to wait for). One still unknown is being
// submitted (HoldForSync comes first); unknown after syncSubmitGrace, it never will be.
func (p *Pipeline) syncTaken(h syncHold, now time.Time) bool {
	var t nudge.Trigger
	if j := p.inflight(h.trigger); j != nil {
		t = j.record()
	} else if st, err := p.deps.Store.Triggers().GetTrigger(h.trigger); err == nil {
		t = st
	} else {
		return now.Sub(h.since) >= syncSubmitGrace
	}
	return t.Closed || t.State == nudge.StateSubmitted || t.State == nudge.StateAcked
}

// syncSubmitGrace bounds how long a hold waits for its sync trigger to be accepted.
const syncSubmitGrace = 10 * time.Second
