package inject

import (
	"time"

	"github.com/nudgehq/nudge"
)

// besideWait is how long Beside waits for a lane's decision in progress (not a delivery,
// which it refuses) before it gives up.
const besideWait = 250 * time.Millisecond

// Beside runs fn, which types a person's keys into the runtime's pane (the web view's
// terminal), while nudge types nothing there: it holds the runtime's lane turn, so no
// delivery starts before fn returns. While a delivery is under way (the typing, the echo
// wait, Enter and its confirmation; or an envelope typed and waiting for its Enter) fn
// does not run and Beside returns a Conflict error: keys typed into the middle of a prompt
// would become part of it.
func (p *Pipeline) Beside(runtimeID string, fn func() error) error {
	busy := nudge.NewError(nudge.Conflict, "nudge is typing a prompt into this pane now: nothing typed; try again in a moment")
	if !p.enter() {
		return nudge.NewError(nudge.Unavailable, "the daemon is stopping")
	}
	defer p.wg.Done()
	l := p.laneFor(runtimeID)
	for deadline := time.Now().Add(besideWait); !l.turn.TryLock(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return busy
		}
	}
	defer l.turn.Unlock()
	if l.cont.j != nil {
		return busy
	}
	return fn()
}
