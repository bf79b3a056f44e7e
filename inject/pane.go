package inject

import (
	"sync"
	"sync/atomic"
	"time"
)

// paneWatch is what the pipeline knows of a runtime's pane between two looks: its output
// activity (Observe feeds it from the control connection's read goroutine), the cursor's
// row at the last pane check, and whether the last delivery there was confirmed. A lane
// owns one (lane.paneWatch) and lends it to each attempt it runs.
type paneWatch struct {
	clean   atomic.Bool   // the last delivery here was confirmed: no envelope of ours is left unentered
	cursorY atomic.Int32  // the cursor's row at the last pane check (-1: not known yet)
	lastOut atomic.Int64  // unix nanos of the latest output chunk
	outSeq  atomic.Uint64 // output chunks seen
	nmu     sync.Mutex
	notify  chan struct{} // closed and replaced on output while waiters exist
	waiters atomic.Int32
}

func (w *paneWatch) init() {
	w.notify = make(chan struct{})
	w.cursorY.Store(-1)
}

// observe records a chunk of pane output. It runs on the control connection's read
// goroutine: no allocation, no blocking.
func (w *paneWatch) observe(now time.Time) {
	w.lastOut.Store(now.UnixNano())
	w.outSeq.Add(1)
	if w.waiters.Load() > 0 {
		w.nmu.Lock()
		close(w.notify)
		w.notify = make(chan struct{})
		w.nmu.Unlock()
	}
}

func (w *paneWatch) outputChan() <-chan struct{} {
	w.nmu.Lock()
	defer w.nmu.Unlock()
	return w.notify
}

// settle waits until output has arrived after seq and then stayed quiet for quiet, or
// until max has passed. It reports whether any output arrived. With quiet 0 it returns at
// the first output. It is woken by the first output only; after that its timer reads
// lastOut.
func (w *paneWatch) settle(done <-chan struct{}, now func() time.Time, seq uint64, quiet, max time.Duration) bool {
	w.waiters.Add(1)
	registered := true
	defer func() {
		if registered {
			w.waiters.Add(-1)
		}
	}()
	deadline := now().Add(max)
	timer := time.NewTimer(max)
	defer timer.Stop()
	for {
		ch := w.outputChan()
		t := now()
		seen := w.outSeq.Load() != seq
		if seen && registered {
			w.waiters.Add(-1) // no more wake-ups needed
			registered = false
		}
		if seen {
			idle := t.Sub(time.Unix(0, w.lastOut.Load()))
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
