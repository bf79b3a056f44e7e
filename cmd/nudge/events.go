package main

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// Event is one line of the /v1/events stream (newline-delimited JSON).
type Event struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Type string    `json:"type"` // runtime, trigger, alert, readiness, ...
	// Workspace the event belongs to; "" for a daemon-wide one. Streams are filtered by
	// it (see caller.seesEvent).
	Workspace string          `json:"workspace,omitempty"`
	Runtime   any             `json:"runtime,omitempty"`
	Trigger   any             `json:"trigger,omitempty"`
	Detail    json.RawMessage `json:"detail,omitempty"`
}

// hub fans events out to subscribers without ever blocking the publisher: each subscriber
// has a bounded buffer, and one that falls behind is dropped (its stream ends; it
// reconnects and re-reads state).
type hub struct {
	mu     sync.Mutex
	seq    uint64
	subs   map[*subscriber]struct{}
	now    func() time.Time
	closed bool
}

type subscriber struct {
	ch      chan Event
	dropped chan struct{}
}

const (
	subscriberBuffer  = 1024
	eventWriteTimeout = 10 * time.Second
)

func newHub(now func() time.Time) *hub {
	return &hub{subs: map[*subscriber]struct{}{}, now: now}
}

// Publish stamps ev and offers it to every subscriber.
func (h *hub) Publish(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	ev.Seq = h.seq
	if ev.Time.IsZero() {
		ev.Time = h.now()
	}
	for s := range h.subs {
		select {
		case s.ch <- ev:
		default:
			delete(h.subs, s)
			close(s.dropped)
		}
	}
}

func (h *hub) subscribe() *subscriber {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &subscriber{ch: make(chan Event, subscriberBuffer), dropped: make(chan struct{})}
	if h.closed {
		close(s.dropped)
		return s
	}
	h.subs[s] = struct{}{}
	return s
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		close(s.dropped)
	}
}

// Close ends every stream.
func (h *hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for s := range h.subs {
		delete(h.subs, s)
		close(s.dropped)
	}
}

// serveEvents streams events as NDJSON until the client goes away, the subscriber is
// dropped for falling behind, or the daemon shuts down.
// Only events show passes are sent (the caller's scope).
func (h *hub) serveEvents(w http.ResponseWriter, r *http.Request, show func(Event) bool) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, badRequest("streaming unsupported"))
		return
	}
	s := h.subscribe()
	defer h.unsubscribe(s)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	enc := json.NewEncoder(w)
	rc := http.NewResponseController(w)
	for {
		// A client that stops reading is cut off instead of holding a goroutine forever.
		_ = rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
		select {
		case <-r.Context().Done():
			return
		case <-s.dropped:
			// Drain what was buffered, then end the stream.
			for {
				select {
				case ev := <-s.ch:
					if show(ev) {
						_ = enc.Encode(ev)
					}
				default:
					fl.Flush()
					return
				}
			}
		case ev := <-s.ch:
			if !show(ev) {
				continue
			}
			if err := enc.Encode(ev); err != nil {
				return
			}
			if len(s.ch) == 0 {
				fl.Flush()
			}
		}
	}
}
