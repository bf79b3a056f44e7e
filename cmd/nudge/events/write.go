package events

import (
	"time"

	"github.com/nudgehq/nudge/store"
)

// An event's way to the store. Publish hands each event to the store's write-behind
// queue and keeps it (inflight) until the store says it committed, so that a replay
// finds every event in the store or in memory. While the store cannot write (a full
// disk, an I/O error: store.DB.Unavailable), events are not queued there but held here,
// up to Config.Backlog, and handed over in order once it can. Past the bound the oldest
// held events are dropped, and lost records that events up to them may be missing:
// a replay from before lost answers EVENTS_EXPIRED. lost goes to the store too
// (LoseEventsLater, ahead of the events numbered after it), and a daemon that crashes
// with events unwritten leaves the log Unclean, which the next Open turns into lost.
//
// Numbers: Publish never gives out a number above the reservation on disk. When the
// store takes no reservation and the reserved numbers run out, events are dropped
// unnumbered (they reach no stream, and every stream ends); once a reservation commits
// the gap they leave is given a number of its own, recorded as lost, so that a reader
// resuming from before it is told.

// writes is what a Hub knows of its events' way to the store. Guarded by Hub.mu.
type writes struct {
	inflight    []Event // handed to the store, not yet known committed; oldest first from inflightOff
	inflightOff int
	held        []Event // numbered while the store could not write; oldest first from heldOff
	heldOff     int
	heldBytes   int64

	lost       uint64 // events up to here may be missing from the store
	lostHanded uint64 // the highest lost handed to the store (LoseEventsLater)
	lostTotal  uint64 // events dropped, ever (Stats)
	unnumbered uint64 // events dropped without a number since the last reservation

	failing       error     // why the store cannot write, while held events wait; nil when it can
	dropping      bool      // the held events overflowed in this episode (logged once)
	reserveFailed time.Time // the last failed reservation (retried every retryEvery)
}

// Stats is a Hub's write health, for /metrics.
type Stats struct {
	// Unwritten is how many events are numbered but not yet in the store (held while it
	// cannot write, or in its write queue).
	Unwritten int
	// Lost is how many events were dropped, ever, because the store could not write
	// them: a replay from before them answers EVENTS_EXPIRED.
	Lost uint64
}

// Stats returns the Hub's write health.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Stats{Unwritten: len(h.w.inflight) - h.w.inflightOff + len(h.w.held) - h.w.heldOff, Lost: h.w.lostTotal}
}

// writeLocked sends a newly numbered ev on its way to the store: handed over, or held
// while the store cannot write (storeErr).
func (h *Hub) writeLocked(ev Event, storeErr error) {
	ev = ev.bare()
	if storeErr != nil && !h.closed {
		if h.w.failing == nil {
			h.w.failing = storeErr
			h.cfg.Logger.Warn("events cannot be written: holding them in memory until the store writes again",
				"from_seq", ev.Seq, "backlog", h.cfg.Backlog, "err", storeErr)
			h.poke() // the retry timer
		}
		h.w.held = append(h.w.held, ev)
		h.w.heldBytes += int64(len(ev.raw))
		h.boundHeldLocked()
		return
	}
	if h.troubledLocked() {
		h.recoverLocked()
	}
	h.handLocked([]Event{ev})
}

// handLocked hands evs (in order, above everything handed before) to the store.
func (h *Hub) handLocked(evs []Event) {
	if len(evs) == 0 {
		return
	}
	se := make([]store.Event, len(evs))
	for i, ev := range evs {
		se[i] = store.Event{Seq: ev.Seq, Time: ev.Time, Data: ev.raw}
	}
	through, n := evs[len(evs)-1].Seq, len(evs)
	h.w.inflight = append(h.w.inflight, evs...)
	h.log.AppendEventsLater(func(err error) { h.written(through, n, err) }, se...)
}

// written is the store's word on the events handed up to through: committed (err nil)
// or dropped. It runs on the store's writer goroutine.
func (h *Hub) written(through uint64, n int, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := &h.w
	for w.inflightOff < len(w.inflight) && w.inflight[w.inflightOff].Seq <= through {
		w.inflight[w.inflightOff] = Event{}
		w.inflightOff++
	}
	w.inflight, w.inflightOff = compact(w.inflight, w.inflightOff)
	if err == nil {
		return
	}
	h.w.lostTotal += uint64(n)
	h.loseLocked(through)
	h.cfg.Logger.Warn("events were not written: a replay from before them answers EVENTS_EXPIRED",
		"through_seq", through, "count", n, "err", err)
	h.poke() // hand the loss to the store from the background, not the writer
}

// loseLocked records that events up to through may be missing from the store.
func (h *Hub) loseLocked(through uint64) {
	h.w.lost = max(h.w.lost, through)
}

// handLostLocked hands lost to the store if it has grown since it was last handed over.
func (h *Hub) handLostLocked() {
	if h.w.lost > h.w.lostHanded {
		h.log.LoseEventsLater(h.w.lost)
		h.w.lostHanded = h.w.lost
	}
}

// handHeldLocked hands the held events to the store, lost first.
func (h *Hub) handHeldLocked() {
	h.handLostLocked()
	held := h.w.held[h.w.heldOff:]
	h.handLocked(held)
	h.w.held, h.w.heldOff, h.w.heldBytes = nil, 0, 0
}

// boundHeldLocked drops the oldest held events beyond Config.Backlog or BacklogBytes.
func (h *Hub) boundHeldLocked() {
	w := &h.w
	for n := len(w.held) - w.heldOff; n > 1 && (n > h.cfg.Backlog || w.heldBytes > h.cfg.BacklogBytes); n-- {
		old := w.held[w.heldOff]
		w.held[w.heldOff] = Event{}
		w.heldOff++
		w.heldBytes -= int64(len(old.raw))
		w.lostTotal++
		h.loseLocked(old.Seq)
		if !w.dropping {
			w.dropping = true
			h.cfg.Logger.Warn("event backlog full while the store cannot write: dropping the oldest unwritten events; a replay from before the newest dropped one answers EVENTS_EXPIRED",
				"dropped_seq", old.Seq, "backlog", h.cfg.Backlog, "backlog_bytes", h.cfg.BacklogBytes)
		}
	}
	w.held, w.heldOff = compact(w.held, w.heldOff)
}

// compact returns q (a queue whose first off entries are spent) with the spent entries
// removed once they are most of it: each entry is moved O(1) times on average.
func compact(q []Event, off int) ([]Event, int) {
	if off == len(q) {
		if cap(q) > 1024 {
			return nil, 0 // after an episode: do not keep its size
		}
		return q[:0], 0
	}
	if off < 64 || off < len(q)/2 {
		return q, off
	}
	n := copy(q, q[off:])
	clear(q[n:])
	return q[:n], 0
}

// troubledLocked reports whether an episode is open: events held, a loss not handed to
// the store, or events dropped unnumbered.
func (h *Hub) troubledLocked() bool {
	return h.w.failing != nil || h.w.heldOff < len(h.w.held) || h.w.lost > h.w.lostHanded || h.w.unnumbered > 0
}

func (h *Hub) troubled() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.troubledLocked()
}

// resume hands the held events to the store once it writes again.
func (h *Hub) resume() {
	if !h.troubled() || h.log.Unavailable() != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.w.unnumbered == 0 { // else the gap's number comes first: reservedLocked
		h.recoverLocked()
	}
}

// recoverLocked ends an episode: the store writes again. The loss and the held events
// are handed to it, in order, before anything newer.
func (h *Hub) recoverLocked() {
	if h.w.unnumbered > 0 {
		return
	}
	held := len(h.w.held) - h.w.heldOff
	h.handHeldLocked()
	if h.w.failing != nil {
		h.cfg.Logger.Info("events are written again", "held_written", held, "lost_total", h.w.lostTotal, "lost_through_seq", h.w.lost)
	}
	h.w.failing, h.w.dropping = nil, false
}

// reserveNowLocked reserves numbers on the publish path, when the background has not
// kept ahead: only while the store writes (it then takes a commit's time).
func (h *Hub) reserveNowLocked(storeErr error) bool {
	if storeErr != nil || time.Since(h.w.reserveFailed) < retryEvery {
		return false
	}
	want := h.seq + reserveBlock
	err := h.log.ReserveEvents(want)
	h.reservedLocked(want, err)
	return err == nil
}

// reservedLocked takes the outcome of a reservation up to want. After events were
// dropped unnumbered, the first number reserved marks their place (see write.go's doc).
func (h *Hub) reservedLocked(want uint64, err error) {
	if err != nil {
		if h.w.reserveFailed.IsZero() {
			h.cfg.Logger.Warn("event numbers cannot be reserved in the store", "through_seq", want, "err", err)
		}
		h.w.reserveFailed = time.Now()
		return
	}
	h.w.reserveFailed = time.Time{}
	h.reserved = max(h.reserved, want)
	if h.w.unnumbered == 0 {
		return
	}
	h.seq++
	h.loseLocked(h.seq)
	h.cfg.Logger.Info("event numbers are reserved again: the events dropped meanwhile are marked lost",
		"dropped", h.w.unnumbered, "gap_seq", h.seq)
	h.w.unnumbered = 0
	h.endStreamsLocked()
	if h.log.Unavailable() == nil {
		h.recoverLocked()
	} else {
		h.handLostLocked() // ahead of the events held meanwhile
	}
}

// dropUnnumberedLocked drops an event that cannot be given a number (none is reserved on
// disk): it reaches no one, and every stream ends so that no reader sees a silent jump.
func (h *Hub) dropUnnumberedLocked(storeErr error) {
	if h.w.unnumbered == 0 {
		h.cfg.Logger.Warn("event numbers ran out while the store cannot reserve more: events are dropped (streams end) until it can",
			"last_seq", h.seq, "err", storeErr)
	}
	h.w.unnumbered++
	h.w.lostTotal++
	h.endStreamsLocked()
	h.poke()
}

// unwrittenAfter returns the events in memory that may not be in the store yet, with
// Seq > after, oldest first.
func (h *Hub) unwrittenAfter(after uint64) []Event {
	var out []Event
	for _, part := range [][]Event{h.w.inflight[h.w.inflightOff:], h.w.held[h.w.heldOff:]} {
		for _, ev := range part {
			if ev.Seq > after {
				out = append(out, ev)
			}
		}
	}
	return out
}
