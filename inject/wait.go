package inject

import (
	"context"
	"sync"
	"time"

	"github.com/nudgehq/nudge"
)

// watchers wakes the goroutines waiting on a trigger's receipt (Wait) whenever it
// changes: each watched trigger has a channel that a change closes and replaces, so a
// waiter never polls and a change never blocks (STYLE: wake waiters by closing a
// channel). Unwatched triggers cost one map lookup per change.
type watchers struct {
	mu sync.Mutex
	m  map[string]*watch // by trigger id, while someone waits
}

type watch struct {
	ch chan struct{} // closed and replaced on each change
	n  int           // waiters
}

// notify wakes the waiters of trigger id.
func (ws *watchers) notify(id string) {
	ws.mu.Lock()
	if w := ws.m[id]; w != nil {
		close(w.ch)
		w.ch = make(chan struct{})
	}
	ws.mu.Unlock()
}

// wait calls check now and after every change of trigger id until it reports true or
// ctx ends; it reports whether check held.
func (ws *watchers) wait(ctx context.Context, id string, check func() bool) bool {
	ws.mu.Lock()
	if ws.m == nil {
		ws.m = map[string]*watch{}
	}
	w := ws.m[id]
	if w == nil {
		w = &watch{ch: make(chan struct{})}
		ws.m[id] = w
	}
	w.n++
	ws.mu.Unlock()
	defer func() {
		ws.mu.Lock()
		if w.n--; w.n == 0 {
			delete(ws.m, id)
		}
		ws.mu.Unlock()
	}()
	for {
		ws.mu.Lock()
		ch := w.ch // taken before check: a change after it closes ch
		ws.mu.Unlock()
		if check() {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// Wait blocks until cond holds for trigger id's receipt, or ctx ends, and returns the
// latest receipt (with ctx's error if cond never held). It wakes on the pipeline's own
// receipt changes: no polling, no event subscription.
func (p *Pipeline) Wait(ctx context.Context, id string, cond func(nudge.Trigger) bool) (nudge.Trigger, error) {
	var (
		t   nudge.Trigger
		err error
	)
	ok := p.waiters.wait(ctx, id, func() bool {
		t, err = p.Get(id)
		return err != nil || cond(t)
	})
	if !ok {
		return t, ctx.Err()
	}
	return t, err
}

// APIAckWait bounds how long Ack waits for the pipeline to record an ack the tracker
// took: the lane that waits for it records it at once, unless the store is slow.
const APIAckWait = 2 * time.Second

// Ack is an explicit ack of trigger id (POST /v1/triggers/{id}/ack) and the one place
// that decides what it means:
//
//   - already acked: nothing to do, the receipt is returned;
//   - a delivery waits for its ack (the Acker takes the signal, if the runtime's profile
//     accepts API acks): the lane records it, and Ack returns the receipt once it says
//     acked (or after APIAckWait, as it then stands);
//   - the live path ended in a fallback launch: the ack is recorded here;
//   - otherwise a *nudge.Error with code CONFLICT: the trigger is not awaiting an ack.
func (p *Pipeline) Ack(ctx context.Context, id string) (nudge.Trigger, error) {
	t, err := p.Get(id)
	switch {
	case err != nil:
		return t, err
	case t.State == nudge.StateAcked:
		return t, nil
	case p.deps.Acks != nil && p.deps.Acks.APIAck(id):
		ctx, cancel := context.WithTimeout(ctx, APIAckWait)
		defer cancel()
		t, err := p.Wait(ctx, id, func(t nudge.Trigger) bool { return t.State == nudge.StateAcked })
		if err != nil && ctx.Err() == nil {
			return t, err
		}
		return t, nil
	}
	got, ok, err := p.ackAfterFallback(id, "api")
	switch {
	case err != nil:
		return got, err
	case !ok:
		return t, nudge.NewError(nudge.Conflict, "trigger "+id+" is "+string(t.State)+": not awaiting an ack")
	}
	return got, nil
}
