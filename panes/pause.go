package panes

import (
	"github.com/nudgehq/nudge"
)

// SetPaused pauses or resumes triggers for a runtime (`nudge pause|resume`). The paused
// flag is the trigger gate; the status shows it: a ready runtime goes to paused at once,
// one in the middle of a trigger (or still starting) when it would next be ready, and
// resuming a paused runtime makes it ready again. Pausing twice is a no-op.
func (r *records) SetPaused(id string, paused bool, reason string) (nudge.Runtime, error) {
	r.mu.Lock()
	cur, ok := r.rts[id]
	if !ok {
		r.mu.Unlock()
		return nudge.Runtime{}, notFound(id)
	}
	status := cur.Status
	set := func(n *nudge.Runtime) { n.Paused = paused }
	var chs []change
	var err error
	switch {
	case paused && status == nudge.StatusReady:
		chs, err = r.transitionLocked(id, nudge.StatusPaused, reason, "", set)
	case !paused && status == nudge.StatusPaused:
		chs, err = r.transitionLocked(id, nudge.StatusReady, reason, "", set)
	case cur.Paused != paused:
		chs, err = r.updateLocked(id, set)
	}
	r.mu.Unlock()
	if err != nil {
		return nudge.Runtime{}, err
	}
	r.notify(chs)
	got, _ := r.Get(id)
	return got, nil
}
