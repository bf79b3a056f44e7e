package inject

import (
	"sync"
	"sync/atomic"
	"time"
)

// lane is one runtime's delivery queue and its view of the pane's output activity.
// One goroutine (runLane) owns the front of the queue.
type lane struct {
	id string

	mu    sync.Mutex
	queue []*job
	wake  chan struct{} // buffered 1: the queue changed or someone kicked the lane

	// turn is held by whoever makes the lane's decisions and deliveries: its goroutine
	// (runLane), or a request's goroutine typing a trigger into an idle lane
	// (typeInline). Under turn: inline says a delivery runs on a request's goroutine,
	// and cont is the rest of a delivery typed that way, for the lane's goroutine.
	turn   sync.Mutex
	inline bool
	cont   func()

	clean   atomic.Bool   // the last delivery here was confirmed: no envelope of ours is left unentered
	cursorY atomic.Int32  // the cursor's row at the last pane check (-1: not known yet)
	lastOut atomic.Int64  // unix nanos of the latest output chunk
	outSeq  atomic.Uint64 // output chunks seen
	nmu     sync.Mutex
	notify  chan struct{} // closed and replaced on output while waiters exist
	waiters atomic.Int32
}

func newLane(id string) *lane {
	l := &lane{id: id, wake: make(chan struct{}, 1), notify: make(chan struct{})}
	l.cursorY.Store(-1)
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

// observe records a chunk of pane output. It runs on the control connection's read
// goroutine: no allocation, no blocking.
func (l *lane) observe(now time.Time) {
	l.lastOut.Store(now.UnixNano())
	l.outSeq.Add(1)
	if l.waiters.Load() > 0 {
		l.nmu.Lock()
		close(l.notify)
		l.notify = make(chan struct{})
		l.nmu.Unlock()
	}
}

func (l *lane) outputChan() <-chan struct{} {
	l.nmu.Lock()
	defer l.nmu.Unlock()
	return l.notify
}

// settle waits until output has arrived after seq and then stayed quiet for quiet, or
// until max has passed. It reports whether any output arrived. With quiet 0 it returns at
// the first output. It is woken by the first output only; after that its timer reads
// lastOut.
func (l *lane) settle(done <-chan struct{}, now func() time.Time, seq uint64, quiet, max time.Duration) bool {
	l.waiters.Add(1)
	registered := true
	defer func() {
		if registered {
			l.waiters.Add(-1)
		}
	}()
	deadline := now().Add(max)
	timer := time.NewTimer(max)
	defer timer.Stop()
	for {
		ch := l.outputChan()
		t := now()
		seen := l.outSeq.Load() != seq
		if seen && registered {
			l.waiters.Add(-1) // no more wake-ups needed
			registered = false
		}
		if seen {
			idle := t.Sub(time.Unix(0, l.lastOut.Load()))
			if idle >= quiet {
				return true
			}
			resetTimer(timer, minDur(quiet-idle, deadline.Sub(t)))
		} else {
			resetTimer(timer, deadline.Sub(t))
		}
		if !t.Before(deadline) {
			return seen
		}
		if seen {
			// Output has come: only its end matters now, and lastOut tells it when the
			// timer fires. Waking at every further chunk would cost a goroutine switch
			// per %output line of a streaming pane.
			select {
			case <-done:
				return seen
			case <-timer.C:
			}
			continue
		}
		select {
		case <-done:
			return seen
		case <-ch:
		case <-timer.C:
		}
	}
}

func resetTimer(t *time.Timer, d time.Duration) {
	if d < 0 {
		d = 0
	}
	t.Stop()
	select {
	case <-t.C:
	default:
	}
	t.Reset(d)
}

func minDur(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}
