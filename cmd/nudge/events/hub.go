// Package events is the daemon's event stream: every event gets a sequence number that
// survives restarts, is kept in the store for a bounded window, and is served on
// /v1/events as NDJSON or server-sent events, replayed from a sequence number and then
// followed.
//
// The main types:
//
//	Event       one event (a runtime or trigger change, readiness, an alert, ...)
//	Hub         numbers, persists and fans events out; Open, Publish, Subscribe, Close
//	Subscriber  a live, bounded feed of a Hub's events
//	Log         what the Hub needs of the store (satisfied by *store.Events)
//	Config      the kept window and the clock; DefaultConfig
//	ExpiredError  a replay that cannot be complete (HTTP 410 EVENTS_EXPIRED)
//
// Publish never blocks on a reader or on the disk: the event is numbered and marshalled
// once, appended to the store's write-behind queue (in order) and offered to each
// subscriber's bounded buffer; a subscriber that falls behind is dropped, and an HTTP
// client then resumes with ?since= or Last-Event-ID.
//
// Nothing goes missing from a replay without it saying so (see write.go): while the store
// cannot write, events are held in memory (bounded) and written in order once it can; an
// event that had to be dropped meanwhile, or that a crash kept from the disk, makes a
// replay from before it fail with EVENTS_EXPIRED. Numbers are never given out above the
// reservation on disk, so they keep increasing across a restart whatever failed.
package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// Event is one entry of the stream; its JSON form is one NDJSON line of /v1/events.
type Event struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Type string    `json:"type"` // runtime, trigger, alert, readiness, fallback, ...
	// Workspace the event belongs to; "" for a daemon-wide one. Streams are filtered by
	// it (the caller's scope).
	Workspace string `json:"workspace,omitempty"`
	// Host is the fleet host an event was relayed from (docs/hub.md); "" for this host's.
	Host    string          `json:"host,omitempty"`
	Runtime any             `json:"runtime,omitempty"`
	Trigger any             `json:"trigger,omitempty"`
	Detail  json.RawMessage `json:"detail,omitempty"`
	// Value is the record Detail was made from (a Readiness), for the daemon's own
	// readers (the notifier): they need not decode Detail. Never streamed or stored.
	Value any `json:"-"`

	raw []byte // the JSON as published (with Seq); shared, never modified
}

// Readiness is a readiness event's detail. Its fields are in the order a map's keys were
// written in before (sorted), so the bytes are the same.
type Readiness struct {
	ActionsNeeded []string        `json:"actions_needed"`
	OperatorBusy  bool            `json:"operator_busy"`
	Readiness     nudge.Readiness `json:"readiness"`
	RuntimeID     string          `json:"runtime_id"`
	Summary       string          `json:"summary"`
}

// JSON returns the event's JSON as it is streamed (no trailing newline). The bytes are
// shared: do not modify them. It is nil for an Event that was never published.
func (e Event) JSON() []byte { return e.raw }

// Log is what the Hub needs of the store: its event log, *store.Events.
type Log interface {
	EventLog() (store.EventLog, error)
	ReserveEvents(through uint64) error
	AppendEventsLater(after func(error), evs ...store.Event)
	LoseEventsLater(through uint64)
	EventsSince(after uint64, limit int) ([]store.Event, uint64, error)
	TrimEventsLater(w store.EventWindow)
	// Unavailable says why the store cannot write now (nil when it can).
	Unavailable() error
}

var _ Log = (*store.Events)(nil)

// Config configures a Hub. Zero fields take DefaultConfig's values.
type Config struct {
	// Keep is how many events the store keeps (the newest). 0 means 10,000.
	Keep int
	// MaxAge drops events older than this. 0 means 24 h.
	MaxAge time.Duration
	// MaxBytes bounds the kept events' stored size (their JSON: a trigger's event holds
	// its prompt). 0 means 64 MiB.
	MaxBytes int64
	// TrimEvery is how often the window is enforced (also after every Keep/10 events).
	// 0 means one minute.
	TrimEvery time.Duration
	// Recent is how many of the newest events are also kept in memory, so that a client
	// that reconnects after a blip resumes without reading the store. 0 means 256.
	Recent int
	// Buffer is each subscriber's buffer; one that falls further behind is dropped.
	// 0 means 1024.
	Buffer int
	// Backlog bounds the events held in memory while the store cannot write (a full
	// disk); past it the oldest are dropped, and a replay from before them answers
	// EVENTS_EXPIRED. 0 means 4096.
	Backlog int
	// BacklogBytes bounds the held events' JSON. 0 means 16 MiB.
	BacklogBytes int64
	// Now is the clock. nil means time.Now.
	Now func() time.Time
	// Logger is told, once per episode, when events cannot be written or numbered and
	// when they can again. nil means no logging.
	Logger hclog.Logger
}

// DefaultConfig returns the production settings.
func DefaultConfig() Config {
	return Config{Keep: 10_000, MaxAge: 24 * time.Hour, MaxBytes: 64 << 20, TrimEvery: time.Minute, Recent: 256,
		Buffer: 1024, Backlog: 4096, BacklogBytes: 16 << 20, Now: time.Now, Logger: hclog.NewNullLogger()}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Keep <= 0 {
		c.Keep = d.Keep
	}
	if c.MaxAge <= 0 {
		c.MaxAge = d.MaxAge
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = d.MaxBytes
	}
	if c.TrimEvery <= 0 {
		c.TrimEvery = d.TrimEvery
	}
	if c.Recent <= 0 {
		c.Recent = d.Recent
	}
	if c.Buffer <= 0 {
		c.Buffer = d.Buffer
	}
	if c.Backlog <= 0 {
		c.Backlog = d.Backlog
	}
	if c.BacklogBytes <= 0 {
		c.BacklogBytes = d.BacklogBytes
	}
	if c.Now == nil {
		c.Now = d.Now
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	return c
}

// reserveBlock is how far ahead sequence numbers are reserved in the store. After a
// restart numbering continues above the reservation, so it may skip up to this many. No
// number is given out above the reservation on disk.
const reserveBlock = 4096

// Hub numbers, persists and fans out events. Open starts it; the daemon owns it and
// calls Close. Safe for concurrent use.
type Hub struct {
	cfg Config
	log Log

	mu        sync.Mutex
	seq       uint64 // the last number given out
	reserved  uint64 // numbers up to this are reserved in the store
	reserving bool
	recent    []Event // ring of the newest events, oldest first once full
	head      int     // next write position in recent when full
	sinceTrim int
	subs      map[*Subscriber]struct{}
	observers map[*func(Event)]struct{} // Observe's: called inside Publish
	closed    bool
	w         writes // the events' way to the store (write.go)

	wake chan struct{} // background work: reserve ahead, trim
	stop chan struct{}
	done chan struct{}
}

// Open starts a Hub on log: numbering continues above everything the log has seen. If
// the last daemon did not close the log cleanly (a crash), the events it numbered but
// had not written are lost: a replay from before its reservation answers EVENTS_EXPIRED.
func Open(cfg Config, log Log) (*Hub, error) {
	cfg = cfg.withDefaults()
	st, err := log.EventLog()
	if err != nil {
		return nil, fmt.Errorf("open events: %w", err)
	}
	start := max(st.Last, st.Reserved, st.Trimmed, st.Lost)
	lost := st.Lost
	if st.Unclean && st.Reserved > st.Last {
		lost = max(lost, st.Reserved)
		cfg.Logger.Warn("the last daemon stopped without writing all its events (a crash?): a replay from before lost_through answers EVENTS_EXPIRED",
			"written_through", st.Last, "lost_through", st.Reserved)
	}
	if err := log.ReserveEvents(start + reserveBlock); err != nil {
		return nil, fmt.Errorf("open events: %w", err)
	}
	h := &Hub{cfg: cfg, log: log, seq: start, reserved: start + reserveBlock,
		subs: map[*Subscriber]struct{}{}, observers: map[*func(Event)]struct{}{}, wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	h.w.lost, h.w.lostHanded = lost, st.Lost
	h.mu.Lock()
	h.handLostLocked() // the crash's loss is on disk before any new event
	h.mu.Unlock()
	go h.background()
	h.poke()
	return h, nil
}

// Last returns the number of the newest event (0 if none ever).
func (h *Hub) Last() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}

// Publish numbers ev, stamps its time if zero, queues it for the store and offers it to
// every subscriber. It returns the event as published. It never blocks on a subscriber
// or on a failing disk. ev's Runtime and Trigger must marshal to JSON.
//
// While the store cannot write, the event is held in memory (Config.Backlog) and
// written once it can. If the numbers reserved on disk are used up (the store could not
// take a new reservation in the last reserveBlock/2 events), it is dropped: it gets no
// number and reaches no one (the returned event's Seq is 0); every stream ends, and once
// numbers can be reserved again the dropped ones' place gets a number of its own, so a
// replay from before it answers EVENTS_EXPIRED.
func (h *Hub) Publish(ev Event) Event {
	if ev.Time.IsZero() {
		ev.Time = h.cfg.Now()
	}
	ev.Seq = 0
	body, err := json.Marshal(ev) // outside the lock; Seq is spliced in below
	if err != nil {
		body, _ = json.Marshal(Event{Time: ev.Time, Type: ev.Type, Workspace: ev.Workspace,
			Detail: mustJSON(map[string]string{"error": "encode event: " + err.Error()})})
	}
	storeErr := h.log.Unavailable() // outside the lock: it takes the store's
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seq >= h.reserved && !h.reserveNowLocked(storeErr) {
		h.dropUnnumberedLocked(storeErr)
		return ev
	}
	h.seq++
	ev.Seq = h.seq
	ev.raw = withSeq(body, ev.Seq)
	h.writeLocked(ev, storeErr)
	h.remember(ev)
	h.sinceTrim++
	if (h.seq+reserveBlock/2 > h.reserved && !h.reserving) || h.sinceTrim >= max(h.cfg.Keep/10, 1) {
		h.poke()
	}
	for s := range h.subs {
		select {
		case s.ch <- ev:
		default:
			h.dropLocked(s)
		}
	}
	for fn := range h.observers {
		(*fn)(ev)
	}
	return ev
}

// seqPrefix is how every marshalled Event begins while its Seq is 0.
var seqPrefix = []byte(`{"seq":0,`)

// withSeq returns body (an Event marshalled with Seq 0) with seq in its place.
func withSeq(body []byte, seq uint64) []byte {
	if !bytes.HasPrefix(body, seqPrefix) {
		panic("events: unexpected encoding " + string(body[:min(len(body), 16)]))
	}
	out := make([]byte, 0, len(body)+20)
	out = append(out, `{"seq":`...)
	out = strconv.AppendUint(out, seq, 10)
	return append(out, body[len(seqPrefix)-1:]...)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// remember puts ev in the ring of recent events: what a replay needs (its JSON, Type,
// Workspace), not the records it was made of.
func (h *Hub) remember(ev Event) {
	ev = ev.bare()
	if len(h.recent) < h.cfg.Recent {
		h.recent = append(h.recent, ev)
		return
	}
	h.recent[h.head] = ev
	h.head = (h.head + 1) % len(h.recent)
}

// recentAfter returns the remembered events with Seq > after, oldest first, and whether
// they are all there are (the ring reaches back to after).
func (h *Hub) recentAfter(after uint64) ([]Event, bool) {
	n := len(h.recent)
	if n == 0 {
		return nil, after >= h.seq
	}
	oldest := h.recent[h.head%n]
	var out []Event
	for i := range n {
		if ev := h.recent[(h.head+i)%n]; ev.Seq > after {
			out = append(out, ev)
		}
	}
	return out, after+1 >= oldest.Seq
}

// bare returns ev without the records it was made of: what a replay needs.
func (ev Event) bare() Event {
	ev.Runtime, ev.Trigger, ev.Detail, ev.Value = nil, nil, nil, nil
	return ev
}

func (h *Hub) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// background reserves numbers ahead, enforces the kept window and, while the store
// cannot write, retries: it writes the held events once it can. Off the publish path.
func (h *Hub) background() {
	defer close(h.done)
	t := time.NewTicker(h.cfg.TrimEvery)
	defer t.Stop()
	retry := time.NewTimer(retryEvery)
	defer retry.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		case <-h.wake:
		case <-retry.C:
		}
		h.reserveAhead()
		h.resume()
		h.trim()
		if h.troubled() {
			retry.Reset(retryEvery)
		}
	}
}

// retryEvery is how often a Hub whose events cannot be written checks the store again.
const retryEvery = 250 * time.Millisecond

func (h *Hub) reserveAhead() {
	h.mu.Lock()
	if h.seq+reserveBlock/2 <= h.reserved || h.reserving || time.Since(h.w.reserveFailed) < retryEvery {
		h.mu.Unlock()
		return
	}
	h.reserving = true
	want := h.seq + reserveBlock
	h.mu.Unlock()
	err := h.log.ReserveEvents(want)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reserving = false
	h.reservedLocked(want, err)
}

func (h *Hub) trim() {
	if h.log.Unavailable() != nil {
		return // the store would only queue it behind the failing commit
	}
	h.mu.Lock()
	h.sinceTrim = 0
	h.mu.Unlock()
	h.log.TrimEventsLater(store.EventWindow{Keep: h.cfg.Keep, MaxBytes: h.cfg.MaxBytes, Before: h.cfg.Now().Add(-h.cfg.MaxAge)})
}

// Close ends every subscription and stops the background work; events held while the
// store could not write are handed to it (the store writes them if it can before it
// closes; if not, the next Open knows they are lost). Events published after Close are
// still numbered and stored, but reach no subscriber. Idempotent.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	h.endStreamsLocked()
	if h.w.unnumbered > 0 {
		// The dropped events' place will get no number from this Hub: the next Open
		// starts above the lost mark, so the number after the reservation is theirs.
		h.loseLocked(max(h.seq, h.reserved) + 1)
		h.w.unnumbered = 0
	}
	h.handHeldLocked() // the lost mark first

	h.mu.Unlock()
	close(h.stop)
	<-h.done
}

// endStreamsLocked drops every subscriber: each stream ends, and its reader resumes.
func (h *Hub) endStreamsLocked() {
	for s := range h.subs {
		h.dropLocked(s)
	}
}

// Subscriber is a live feed of a Hub's events from the moment it subscribed. C has a
// bounded buffer; a subscriber that falls behind is dropped: Dropped is closed, and what
// is left in C can still be drained. Unsubscribe when done.
type Subscriber struct {
	C       <-chan Event
	Dropped <-chan struct{}

	ch      chan Event
	dropped chan struct{}
}

// Observe has fn called with every numbered event, in order, inside Publish (under the
// Hub's lock): for a reader in the daemon whose work per event is a few map lookups (the
// notifier), which then costs no goroutine wake per event and can never fall behind. fn
// must not block or call the Hub. Once the returned stop has returned, fn is not running
// and is not called again.
func (h *Hub) Observe(fn func(Event)) (stop func()) {
	p := &fn
	h.mu.Lock()
	h.observers[p] = struct{}{}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.observers, p)
		h.mu.Unlock()
	}
}

// Subscribe returns a new subscriber. After Close it is dropped at once.
func (h *Hub) Subscribe() *Subscriber {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.subscribeLocked()
}

func (h *Hub) subscribeLocked() *Subscriber {
	s := &Subscriber{ch: make(chan Event, h.cfg.Buffer), dropped: make(chan struct{})}
	s.C, s.Dropped = s.ch, s.dropped
	if h.closed {
		close(s.dropped)
		return s
	}
	h.subs[s] = struct{}{}
	return s
}

// Unsubscribe ends s. Idempotent.
func (h *Hub) Unsubscribe(s *Subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		h.dropLocked(s)
	}
}

func (h *Hub) dropLocked(s *Subscriber) {
	delete(h.subs, s)
	close(s.dropped)
}
