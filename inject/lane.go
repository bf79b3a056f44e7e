package inject

import (
	"sync"
	"sync/atomic"

	"github.com/nudgehq/nudge"
)

// lane is one runtime's delivery queue and its view of the runtime's pane (paneWatch).
// One goroutine (Pipeline.runLane) owns the front of the queue: it makes the lane's
// decisions and deliveries, and whoever holds the lane's turn (that goroutine, or a
// request's typing inline) is the only code that changes the lane's jobs, from their
// first decision to their close. A job's ack wait and its fallback chain run on
// goroutines of their own and change nothing of it: they post their end (the ack, the
// timeout, the chain's close or live delivery) to the lane, whose goroutine applies it
// before its next decision, while it waits, and while an attempt runs.
type lane struct {
	id string
	paneWatch

	mu    sync.Mutex
	queue []*job
	wake  chan struct{} // buffered 1: the queue changed or someone kicked the lane

	// turn is held by whoever makes the lane's decisions and deliveries: its goroutine
	// (runLane), or a request's goroutine typing a trigger into an idle lane
	// (typeInline). Under turn: cont is the rest of a delivery typed that way (its
	// typing's outcome), for the lane's goroutine.
	turn sync.Mutex
	cont typed

	// ends are the ends of this lane's jobs that other goroutines came to (an ack wait's
	// ack or timeout, a fallback chain's close or live delivery: post), for the lane's
	// goroutine to apply (drainEnds): before each decision, while it waits, and while an
	// attempt runs (attemptServing), so that an ack never waits behind a delivery.
	emu  sync.Mutex
	ends []func(*lane)
	endc chan struct{} // buffered 1: ends were posted
}

// typed is a delivery whose typing a request's goroutine made (typeInline): its outcome
// (oTyped), for the lane's goroutine to record and go on with (its Enter stage).
type typed struct {
	j    *job // nil: none
	rt   nudge.Runtime
	conn Sender
	o    outcome
}

func newLane(id string) *lane {
	l := &lane{id: id, wake: make(chan struct{}, 1), endc: make(chan struct{}, 1)}
	l.paneWatch.init()
	return l
}

func (l *lane) kick() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// push queues j at the front or the back and reports whether other jobs are ahead of it.
func (l *lane) push(j *job, front bool) (behind bool) {
	l.mu.Lock()
	if front {
		l.queue = append([]*job{j}, l.queue...)
	} else {
		l.queue = append(l.queue, j)
	}
	behind = !front && len(l.queue) > 1
	l.mu.Unlock()
	l.kick()
	return behind
}

// snapshot appends the queued jobs, in order, to buf.
func (l *lane) snapshot(buf []*job) []*job {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append(buf, l.queue...)
}

// remove takes j out of the queue and reports whether it was there.
func (l *lane) remove(j *job) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, q := range l.queue {
		if q == j {
			l.queue = append(l.queue[:i], l.queue[i+1:]...)
			return true
		}
	}
	return false
}

func (l *lane) depth() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue)
}

// lanes are the pipeline's lanes by runtime id.
type lanes struct {
	mu sync.Mutex
	m  map[string]*lane

	// delivering counts the deliveries in progress: typing, the echo wait, Enter and
	// its confirmation, on a lane's goroutine or typed by a request's (typeInline, then
	// the lane's cont). While it is above zero a new trigger is not typed on its
	// request's goroutine and its request does not wait for its lane: the answer would
	// wait behind the other deliveries' commands in tmux and its own typing (an accept's
	// p99 under a backlog was the typing's).
	delivering atomic.Int32
}

// laneFor returns runtime id's lane, starting it (and its goroutine) if needed.
func (p *Pipeline) laneFor(id string) *lane {
	p.lanes.mu.Lock()
	defer p.lanes.mu.Unlock()
	l, ok := p.lanes.m[id]
	if !ok {
		l = newLane(id)
		p.lanes.m[id] = l
		p.goIfOpen(func() { p.runLane(l) })
	}
	return l
}

// lane returns runtime id's lane, nil if it has none. It never blocks for long: the
// control connection's read goroutine calls it for every chunk of output (Observe).
func (p *Pipeline) lane(id string) *lane {
	p.lanes.mu.Lock()
	defer p.lanes.mu.Unlock()
	return p.lanes.m[id]
}

// kick makes runtime id's lane look again now.
func (p *Pipeline) kick(id string) {
	if l := p.lane(id); l != nil {
		l.kick()
	}
}

// enqueue puts j at the back of its runtime's lane, starting the lane if needed. A job
// that queues behind others, or while any delivery is in progress, has had its first
// decision: it waits its turn (Submit answers "queued" at once instead of
// waiting on the deliveries in progress and on its own typing behind them).
func (p *Pipeline) enqueue(j *job) {
	if behind := p.laneFor(j.t.RuntimeID).push(j, false); behind || p.lanes.delivering.Load() > 0 {
		j.markDecided()
	}
}

func (p *Pipeline) removeFromLane(j *job) {
	if l := p.lane(j.record().RuntimeID); l != nil {
		l.remove(j)
	}
}

// post hands an end of j, reached on another goroutine (its ack wait's, its fallback
// chain's), to the lane of j's runtime: its goroutine applies it, the one code that
// changes the lane's jobs. A job closed meanwhile ignores it. Posted once the pipeline
// is closing, it may never be applied: the trigger then stays open in the store, and
// Open resumes it.
func (p *Pipeline) post(j *job, end func(*lane)) {
	l := p.laneFor(j.record().RuntimeID)
	l.emu.Lock()
	l.ends = append(l.ends, func(l *lane) {
		if !j.record().Closed {
			end(l)
		}
	})
	l.emu.Unlock()
	select {
	case l.endc <- struct{}{}:
	default:
	}
}

// drainEnds applies the ends posted to l, in order. Its caller holds l's turn.
func (p *Pipeline) drainEnds(l *lane) {
	for {
		l.emu.Lock()
		ends := l.ends
		l.ends = nil
		l.emu.Unlock()
		if len(ends) == 0 {
			return
		}
		for _, end := range ends {
			end(l)
		}
	}
}
