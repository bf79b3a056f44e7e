package ack

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/ack/record"
	"github.com/nudgehq/nudge/panes"
)

// Signal names, as recorded in a receipt's ack_signal.
const (
	SignalMarker    = "marker"
	SignalAPI       = "api"
	SignalHeartbeat = "heartbeat"
	SignalCursor    = "cursor"
	// SignalRecord: the prompt is in the agent's own session record as a user message
	// (a turn took it); the receipt's evidence names the file and line.
	SignalRecord = "record"
)

// Errors callers branch on.
var (
	// ErrNotExpected: no ack is being waited for on that trigger.
	ErrNotExpected = errors.New("ack: trigger is not awaiting an ack")
)

// TrackerConfig configures a Tracker. The zero value tracks the signals of the
// triggers it is told of and follows no record.
type TrackerConfig struct {
	// Signals returns the ack signals a runtime can give; nil means its profile's
	// AckSignals (Runtimes, Profiles); nil or an empty answer accepts all.
	Signals func(runtimeID string) []string
	// Bus: the Tracker reads pane output (nudge.Bus.ReadOutput), runtime changes and
	// emptied queues on it from Open, and publishes the replies its records show
	// (nudge.ReplyRead). nil: it is fed by hand (Feed, Dequeued) and follows no record.
	Bus *nudge.Bus
	// Runtimes is the registry: the runtimes whose records are followed (from their
	// profile's Record), and where a session id read from a record is written. nil: no
	// record is followed.
	Runtimes Runtimes
	// Profiles are the agent profiles by name.
	Profiles map[string]panes.Profile
	// Getenv is the daemon's environment (records live where the CLIs' variables say);
	// nil means os.Getenv.
	Getenv func(string) string
	// OpenRecord opens a record reader; nil means record.Open (tests replace it).
	OpenRecord func(f record.Format, s record.Spec) record.Reader
	Logger     hclog.Logger
	Now        func() time.Time
}

// Runtimes is what the Tracker needs of the registry (*panes.Registry).
type Runtimes interface {
	Get(id string) (nudge.Runtime, bool)
	List() []nudge.Runtime
	Update(id string, fn func(*nudge.Runtime)) (nudge.Runtime, error)
}

// Tracker collects ack signals for triggers that wait for one: the ACK_TRIGGER:<id>
// marker in the runtime's output, an API ack, and heartbeats or read-cursor advances
// after the trigger's delivery. Safe for concurrent use; Feed runs on the control
// connection's read goroutine and neither blocks nor allocates.
type Tracker struct {
	cfg TrackerConfig
	rec *watcher // the runtimes' own records (watch.go)
	sub *nudge.Client
	out func() // stops reading pane output

	mu       sync.Mutex
	pending  map[string]*pending  // by trigger id
	runtimes map[string]*watchset // by runtime id
	// recorded: prompts seen in a record before their ack wait began (a record read
	// again after a restart, or faster than the pipeline), by runtime id NUL trigger id
	// → evidence; recOrder bounds it.
	recorded map[string]string
	recOrder map[string][]string // runtime id → its keys in recorded, oldest first
}

type pending struct {
	triggerID, runtimeID string
	since                time.Time // the latest delivery: heartbeats must come after it
	queued               bool      // waiting in the agent's own queue (see Queued)
	handed               bool      // typed or handed to the runtime (see Handed): only then can it ack
	done                 chan struct{}
	signal               string
	evidence             string // where the ack was seen (SignalRecord: file:line)
}

// watchset is one runtime's stream state.
type watchset struct {
	id      string
	m       Matcher
	pending map[string]*pending
	cursor  string
	found   func(id []byte) // bound once: Feed does not allocate a closure
	t       *Tracker
}

// NewTracker returns an empty Tracker; Open starts its reading.
func NewTracker(cfg TrackerConfig) *Tracker {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	k := &Tracker{cfg: cfg, pending: map[string]*pending{}, runtimes: map[string]*watchset{}, recorded: map[string]string{}, recOrder: map[string][]string{}}
	k.rec = &watcher{k: k, program: map[string]time.Time{}, follows: map[string]following{}, degraded: map[string]string{}}
	k.rec.rs = NewRecords(RecordsConfig{Sink: k.rec, Open: cfg.OpenRecord, Now: cfg.Now, Logger: cfg.Logger})
	if cfg.Signals == nil && cfg.Runtimes != nil {
		k.cfg.Signals = func(id string) []string {
			rt, _ := cfg.Runtimes.Get(id)
			return cfg.Profiles[rt.Agent].AckSignals
		}
	}
	return k
}

// Open starts reading: pane output (the ack marker), runtime changes (a program that
// started has its record followed; one gone has its reader stopped), emptied input
// queues; and follows the records of the runtimes running already. Close stops it.
func (k *Tracker) Open() {
	k.out = k.cfg.Bus.ReadOutput(k)
	k.sub = nudge.NewClient(k.cfg.Bus, "ack", 256)
	nudge.Subscribe(k.sub, func(ev nudge.QueueEmptied) { k.Dequeued(ev.RuntimeID, ev.At) })
	if k.cfg.Runtimes == nil {
		return
	}
	nudge.Subscribe(k.sub, func(ev nudge.RuntimeChanged) { k.rec.follow(ev.Runtime) })
	for _, rt := range k.cfg.Runtimes.List() { // after subscribing: no start is missed
		k.rec.follow(rt)
	}
}

// Close stops reading, ends every record reader and waits for them. Idempotent.
func (k *Tracker) Close() {
	if k.out != nil {
		k.out()
	}
	if k.sub != nil {
		k.sub.Close()
	}
	k.rec.rs.Close()
}

// PaneOutput takes a managed pane's output (nudge.OutputReader): Feed.
func (k *Tracker) PaneOutput(runtimeID string, data []byte) { k.Feed(runtimeID, data) }

// Degraded lists the runtimes whose record could not be read, and why.
func (k *Tracker) Degraded() map[string]string { return k.rec.degradedCopy() }

// Expect starts (or refreshes) the wait for t's ack. Each call moves the delivery time
// that heartbeats must follow to now.
//
// What the runtime writes (its marker, its record) acks t only once t was handed to it:
// t's record says it was typed or given (injected_at or submitted_at: a trigger resumed
// after a restart, or waiting for its ack), or Handed was called. A prompt seen in the
// runtime's record before its wait began acks it here only then, and only if Handed was
// not called in between (a line written before the prompt was handed is no evidence).
func (k *Tracker) Expect(t nudge.Trigger) {
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.pending[t.TriggerID]
	if p == nil {
		p = &pending{triggerID: t.TriggerID, runtimeID: t.RuntimeID, done: make(chan struct{})}
		k.pending[t.TriggerID] = p
		k.watch(t.RuntimeID).pending[t.TriggerID] = p
	}
	p.since = k.cfg.Now()
	p.handed = p.handed || t.InjectedAt != nil || t.SubmittedAt != nil
	if !p.handed {
		return
	}
	if ev := k.recorded[t.RuntimeID+"\x00"+t.TriggerID]; ev != "" {
		p.evidence = ev
		k.ackLocked(p, SignalRecord)
	}
}

// Handed says that trigger id is being typed or handed to runtimeID now: from here on,
// its marker in that runtime's output and its prompt in that runtime's record ack it.
// A prompt the record showed before (a line the agent wrote itself, naming a trigger it
// had not been given) is forgotten. The wait must have begun (Expect) on runtimeID.
func (k *Tracker) Handed(runtimeID, triggerID string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.recorded, runtimeID+"\x00"+triggerID)
	if p := k.pending[triggerID]; p != nil && p.runtimeID == runtimeID {
		p.handed = true
	}
}

func (k *Tracker) watch(runtimeID string) *watchset {
	w := k.runtimes[runtimeID]
	if w == nil {
		w = &watchset{id: runtimeID, pending: map[string]*pending{}, t: k}
		w.found = w.onMarker
		k.runtimes[runtimeID] = w
	}
	return w
}

// Wait blocks until the trigger is acked, returning the signal, or until ctx ends. An
// ack that came before Wait is returned at once.
func (k *Tracker) Wait(ctx context.Context, triggerID string) (string, error) {
	k.mu.Lock()
	p := k.pending[triggerID]
	k.mu.Unlock()
	if p == nil {
		return "", ErrNotExpected
	}
	select {
	case <-p.done:
		return p.signal, nil
	default:
	}
	select {
	case <-p.done:
		return p.signal, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Forget drops the wait for a trigger.
func (k *Tracker) Forget(triggerID string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p := k.pending[triggerID]; p != nil {
		delete(k.pending, triggerID)
		if w := k.runtimes[p.runtimeID]; w != nil {
			delete(w.pending, triggerID)
		}
	}
}

// Feed scans a chunk of a runtime's output for ack markers.
func (k *Tracker) Feed(runtimeID string, chunk []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	w := k.runtimes[runtimeID]
	if w == nil || len(w.pending) == 0 {
		return
	}
	w.m.Feed(chunk, w.found)
}

// Flush reports a marker id left at the end of a runtime's stream (the pane went quiet).
func (k *Tracker) Flush(runtimeID string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if w := k.runtimes[runtimeID]; w != nil {
		w.m.Flush(w.found)
	}
}

func (w *watchset) onMarker(id []byte) {
	if p := w.pending[string(id)]; p != nil && p.handed {
		w.t.ackLocked(p, SignalMarker)
	}
}

// APIAck acks a trigger by an explicit call. It reports false if nothing waits on it,
// or its prompt was not handed to its runtime yet (the agent's own runtime token may
// call it: like its marker, its record and its heartbeats, it acks only what it was given).
func (k *Tracker) APIAck(triggerID string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.pending[triggerID]
	if p == nil || !p.handed || !k.accepts(p.runtimeID, SignalAPI) {
		return false
	}
	k.ackLocked(p, SignalAPI)
	return true
}

// maxRecorded bounds the prompts remembered as seen in a runtime's record before their
// wait, per runtime: one agent writing envelopes without end pushes out only its own.
const maxRecorded = 1024

// RecordAck acks a trigger whose prompt runtimeID's record shows as a user message, at
// evidence (file:line), whatever else the screen shows: queued or not, the agent has
// it. A trigger sent to another runtime is not acked by this one's record, nor is one
// not handed to this runtime yet (queued, deferred: the line is the agent's own
// writing); one not waited for yet, or not handed yet, is remembered, and Expect acks it
// once its record says it was handed (a daemon restarted after typing it), unless Handed
// came first. It says whose prompt it was.
func (k *Tracker) RecordAck(runtimeID, triggerID, evidence string) RecordOwner {
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.pending[triggerID]
	if p != nil && p.runtimeID != runtimeID {
		return RecordForeign // another runtime's record (two agents in one directory)
	}
	if p == nil || !p.handed {
		if key := runtimeID + "\x00" + triggerID; k.recorded[key] == "" {
			k.recorded[key] = evidence
			order := append(k.recOrder[runtimeID], key)
			if len(order) > maxRecorded {
				delete(k.recorded, order[0])
				order = order[1:]
			}
			k.recOrder[runtimeID] = order
		}
		return RecordUnknown
	}
	if p.evidence == "" {
		p.evidence = evidence
	}
	k.ackLocked(p, SignalRecord)
	return RecordMine
}

// RecordOwner says whose prompt a record showed (RecordAck).
type RecordOwner uint8

const (
	// RecordUnknown: no trigger handed to this runtime waits on that id (typed by hand,
	// not waited for yet, or not handed yet).
	RecordUnknown RecordOwner = iota
	// RecordMine: a trigger handed to this runtime; it is acked.
	RecordMine
	// RecordForeign: a trigger sent to another runtime: the record is not this one's.
	RecordForeign
)

// Evidence returns where a trigger's ack was seen ("" when its signal carries none).
func (k *Tracker) Evidence(triggerID string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p := k.pending[triggerID]; p != nil {
		return p.evidence
	}
	return ""
}

// Working reports whether the runtime's own record is being read and shows its agent
// mid-turn: a prompt's ack wait is not over while the agent works on a turn, and a
// prompt typed meanwhile waits in its own queue.
func (k *Tracker) Working(runtimeID string) bool { return k.rec.rs.Working(runtimeID) }

// RecordLive reports whether the runtime's record is being read: its acks come from it,
// and the envelope need not ask the agent to print the marker.
func (k *Tracker) RecordLive(runtimeID string) bool { return k.rec.rs.Live(runtimeID) }

// SyncRecord reads the runtime's own record to its end now, so that a prompt it holds
// is acked before a retype, retry or fallback is decided (a write its reader had not
// seen yet counts); it returns when that read is done or ctx ends.
func (k *Tracker) SyncRecord(ctx context.Context, runtimeID string) {
	_ = k.rec.rs.Sync(ctx, runtimeID)
}

// Heartbeat records a runtime heartbeat: activity at `at` acks every trigger delivered
// before it, and a cursor different from the last one acks them as a read-cursor
// advance. It reports whether the cursor advanced (progress, for the loop guard).
func (k *Tracker) Heartbeat(runtimeID string, at time.Time, cursor string) (advanced bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	w := k.watch(runtimeID)
	advanced = cursor != "" && cursor != w.cursor
	if cursor != "" {
		w.cursor = cursor
	}
	if at.IsZero() {
		at = k.cfg.Now()
	}
	for _, p := range w.pending {
		if p.queued || !p.handed {
			continue // the turn that beats is not the one that will take it
		}
		switch {
		case advanced && k.accepts(runtimeID, SignalCursor):
			k.ackLocked(p, SignalCursor)
		case at.After(p.since) && k.accepts(runtimeID, SignalHeartbeat):
			k.ackLocked(p, SignalHeartbeat)
		}
	}
	return advanced
}

// Offline takes a heartbeat whose status is offline (seed 000 §10.3): the agent is not
// working, so it acks no trigger; its cursor (if any) is kept, so a later heartbeat acks
// only by advancing past it.
func (k *Tracker) Offline(runtimeID, cursor string) {
	if cursor == "" {
		return
	}
	k.mu.Lock()
	k.watch(runtimeID).cursor = cursor
	k.mu.Unlock()
}

// Queued marks a trigger the agent took into its own input queue while busy: heartbeats
// and cursor advances come from the turn still running, not from one that read the
// prompt, so they do not ack it until the agent takes it up (Dequeued). Its marker and
// an API ack still do.
func (k *Tracker) Queued(triggerID string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p := k.pending[triggerID]; p != nil {
		p.queued = true
	}
}

// Dequeued reports that the runtime's agent emptied its input queue at `at` (the queue
// left its screen): its queued triggers are in a turn now, and heartbeats after at ack
// them.
func (k *Tracker) Dequeued(runtimeID string, at time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if w := k.runtimes[runtimeID]; w != nil {
		for _, p := range w.pending {
			if p.queued {
				p.queued, p.since = false, at
			}
		}
	}
}

func (k *Tracker) accepts(runtimeID, signal string) bool {
	if k.cfg.Signals == nil {
		return true
	}
	s := k.cfg.Signals(runtimeID)
	return len(s) == 0 || slices.Contains(s, signal)
}

// ackLocked marks p acked once. k.mu is held.
func (k *Tracker) ackLocked(p *pending, signal string) {
	select {
	case <-p.done:
		return
	default:
	}
	if signal == SignalMarker && !k.accepts(p.runtimeID, SignalMarker) {
		return
	}
	p.signal = signal
	close(p.done)
}

// Cursor returns the last cursor a runtime reported.
func (k *Tracker) Cursor(runtimeID string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if w := k.runtimes[runtimeID]; w != nil {
		return w.cursor
	}
	return ""
}

// OnScreen reports whether a capture of the runtime's pane shows the trigger's ack
// marker (see the function OnScreen), for a runtime that acks by marker. The pipeline
// asks it before any retry or fallback.
func (k *Tracker) OnScreen(runtimeID, triggerID string, lines []string) bool {
	k.mu.Lock()
	ok := k.accepts(runtimeID, SignalMarker)
	k.mu.Unlock()
	return ok && OnScreen(lines, triggerID)
}
