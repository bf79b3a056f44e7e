package nudge

import (
	"reflect"
	"sync"
	"sync/atomic"
)

// Bus carries news from the room that owns it to the rooms that react to it, in one
// process: a room publishes the events it owns (Publish: RuntimeChanged, ReplyRead, ...)
// and the rooms that care subscribe in their own Open (NewClient, Subscribe), each
// Client with its own goroutine and queue. "Who reacts to X" is then one search for
// Subscribe(…, func(ev X)). The zero Bus is not usable; NewBus makes one. A nil *Bus
// publishes nothing (a room opened without one, in tests).
//
// Delivery. A Client runs its handlers one at a time, on its own goroutine, in the
// order the bus took the events (Publish holds one lock while it queues an event for
// every subscriber, so two clients see any two events in the same order). A handler may
// publish; it must not Close its own client.
//
// A slow subscriber never blocks a publisher, and loses nothing. Publish only appends to
// each subscribing client's queue and wakes its goroutine. A client's queue holds
// queueLen events in its steady state; past that it grows (the overflow is counted,
// ClientStats.Overflow), it never drops and never waits. The events that must not be
// lost (a ReplyRead feeding a receipt, a TriggerChanged feeding the event stream's
// durable sequence) are why: dropping one would lose a receipt's reply or a sequence
// number for good, and blocking would stall a connection's read loop or a delivery lane
// behind, say, a --notify-command or a slow disk. The growth is bounded by its sources:
// every event stems from a stored trigger (rate-limited per thread and runtime), a
// persisted runtime change or a pane's screen, so a queue outgrows queueLen only while
// its subscriber is stalled, and Stats shows it. A subscriber that needs only the latest
// state of a thing (kick a lane, redraw a workspace) subscribes with SubscribeLatest:
// an event whose key is queued already replaces it in place, so its queue never holds
// more than one event per key.
//
// Close stops taking events, lets every client drain its queue, and waits for their
// goroutines: no goroutine outlives it.
//
// Pane output is not an event: it is the hot path, a direct call on the control
// connection's read goroutine into every OutputReader (ReadOutput, Output), with no
// queue and no allocation.
type Bus struct {
	mu      sync.Mutex
	subs    map[reflect.Type][]*subscription
	clients map[*Client]struct{}
	closed  bool

	out   atomic.Pointer[[]OutputReader] // copy on write: Output reads it without a lock
	outMu sync.Mutex                     // serialises ReadOutput's writers
}

// NewBus returns a bus with no subscriber.
func NewBus() *Bus {
	return &Bus{subs: map[reflect.Type][]*subscription{}, clients: map[*Client]struct{}{}}
}

// subscription is one handler of one client for one event type.
type subscription struct {
	c   *Client
	fn  any              // func(T)
	key func(any) string // SubscribeLatest's key; nil: every event is queued
}

// Client is one subscriber: a goroutine and its queue. Its owner makes it in its Open
// (NewClient), subscribes its handlers (Subscribe, SubscribeLatest) and closes it in its
// Close.
type Client struct {
	b        *Bus
	name     string
	queueLen int

	mu      sync.Mutex
	q       []*item
	latest  map[string]*item // SubscribeLatest: the queued event of each key
	closing bool
	stats   ClientStats

	wake chan struct{} // capacity 1: a queued event
	done chan struct{} // closed when the goroutine ends
	once sync.Once
}

// item is one queued event for one handler.
type item struct {
	run func()
	key string // "" unless coalesced
}

// ClientStats is what a client's queue went through.
type ClientStats struct {
	Name      string
	Queued    int    // events waiting now
	HighWater int    // the most ever waiting at once
	Delivered uint64 // handlers run
	Overflow  uint64 // events queued past queueLen (kept, never dropped)
	Coalesced uint64 // events that replaced a queued one of the same key (SubscribeLatest)
}

// NewClient starts a subscriber named name (for Stats and logs) whose queue holds
// queueLen events in its steady state (<1 means 64). Close it in its owner's Close. On a
// nil or closed bus it is a client that never gets an event.
func NewClient(b *Bus, name string, queueLen int) *Client {
	if queueLen < 1 {
		queueLen = 64
	}
	c := &Client{b: b, name: name, queueLen: queueLen, latest: map[string]*item{},
		q: make([]*item, 0, queueLen), wake: make(chan struct{}, 1), done: make(chan struct{})}
	c.stats.Name = name
	if b != nil {
		b.mu.Lock()
		if b.closed {
			c.closing = true
		} else {
			b.clients[c] = struct{}{}
		}
		b.mu.Unlock()
	}
	go c.run()
	return c
}

// Subscribe runs fn on c's goroutine for every event of type T published on c's bus
// after it returns.
func Subscribe[T any](c *Client, fn func(T)) {
	c.subscribe(reflect.TypeFor[T](), &subscription{c: c, fn: fn})
}

// SubscribeLatest is Subscribe for a handler that needs only the latest event of each
// key: an event whose key (key(ev)) has an event still queued replaces it there, so the
// handler sees the newest one, at the older one's place in the queue.
func SubscribeLatest[T any](c *Client, key func(T) string, fn func(T)) {
	k := func(ev any) string { return key(ev.(T)) }
	c.subscribe(reflect.TypeFor[T](), &subscription{c: c, fn: fn, key: k})
}

func (c *Client) subscribe(t reflect.Type, s *subscription) {
	b := c.b
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.subs[t] = append(b.subs[t], s)
	}
}

// Publish hands ev to every client subscribed to T, without waiting for any (see Bus).
// It is a no-op on a nil or closed bus.
func Publish[T any](b *Bus, ev T) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	for _, s := range b.subs[reflect.TypeFor[T]()] {
		fn := s.fn.(func(T))
		it := &item{run: func() { fn(ev) }}
		if s.key != nil {
			it.key = reflect.TypeFor[T]().String() + "\x00" + s.key(ev)
		}
		s.c.enqueue(it)
	}
}

// enqueue appends it (or replaces the queued event of its key) and wakes the goroutine.
func (c *Client) enqueue(it *item) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	if it.key != "" {
		if old := c.latest[it.key]; old != nil {
			old.run = it.run
			c.stats.Coalesced++
			c.mu.Unlock()
			return
		}
		c.latest[it.key] = it
	}
	c.q = append(c.q, it)
	if n := len(c.q); n > c.queueLen {
		c.stats.Overflow++
	}
	c.stats.HighWater = max(c.stats.HighWater, len(c.q))
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run is the client's goroutine: it runs the queued handlers in order until the client
// is closing and its queue is empty.
func (c *Client) run() {
	defer close(c.done)
	for {
		c.mu.Lock()
		if len(c.q) == 0 {
			if c.closing {
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
			<-c.wake
			continue
		}
		it := c.q[0]
		c.q[0] = nil
		c.q = c.q[1:]
		if len(c.q) == 0 && cap(c.q) > 4*c.queueLen {
			c.q = make([]*item, 0, c.queueLen) // an overflow passed: give its memory back
		}
		if it.key != "" {
			delete(c.latest, it.key)
		}
		run := it.run
		c.mu.Unlock()
		run()
		c.mu.Lock()
		c.stats.Delivered++
		c.mu.Unlock()
	}
}

// Close unsubscribes c, runs the handlers of the events already queued, and waits for
// its goroutine to end. Idempotent; not from c's own handlers.
func (c *Client) Close() {
	c.once.Do(func() {
		if b := c.b; b != nil {
			b.mu.Lock()
			for t, subs := range b.subs {
				keep := subs[:0:0]
				for _, s := range subs {
					if s.c != c {
						keep = append(keep, s)
					}
				}
				b.subs[t] = keep
			}
			delete(b.clients, c)
			b.mu.Unlock()
		}
		c.mu.Lock()
		c.closing = true
		c.mu.Unlock()
		select {
		case c.wake <- struct{}{}:
		default:
		}
	})
	<-c.done
}

// Stats returns what c's queue went through.
func (c *Client) Stats() ClientStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Queued = len(c.q)
	return s
}

// Stats returns the stats of every open client.
func (b *Bus) Stats() []ClientStats {
	b.mu.Lock()
	cs := make([]*Client, 0, len(b.clients))
	for c := range b.clients {
		cs = append(cs, c)
	}
	b.mu.Unlock()
	out := make([]ClientStats, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Stats())
	}
	return out
}

// Close stops taking events and closes every client still open (each drains its queue),
// waiting for their goroutines. Idempotent; safe on nil.
func (b *Bus) Close() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.closed = true
	cs := make([]*Client, 0, len(b.clients))
	for c := range b.clients {
		cs = append(cs, c)
	}
	b.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

// OutputReader reads the decoded output of managed panes: the hot path. PaneOutput runs
// on a control connection's read goroutine; data is valid only during the call; it must
// neither block nor allocate.
type OutputReader interface {
	PaneOutput(runtimeID string, data []byte)
}

// ReadOutput adds r to the readers of pane output (Output) until stop is called. A room
// calls it in its Open and stop in its Close.
func (b *Bus) ReadOutput(r OutputReader) (stop func()) {
	if b == nil {
		return func() {}
	}
	b.outMu.Lock()
	defer b.outMu.Unlock()
	b.setReaders(append(b.readers(), r))
	var once sync.Once
	return func() {
		once.Do(func() {
			b.outMu.Lock()
			defer b.outMu.Unlock()
			rs := b.readers()
			for i, x := range rs {
				if x == r {
					b.setReaders(append(rs[:i:i], rs[i+1:]...))
					break
				}
			}
		})
	}
}

func (b *Bus) readers() []OutputReader {
	if p := b.out.Load(); p != nil {
		return append([]OutputReader(nil), *p...)
	}
	return nil
}

func (b *Bus) setReaders(rs []OutputReader) { b.out.Store(&rs) }

// Output hands a managed pane's decoded output to every OutputReader, directly, on the
// caller's goroutine (a control connection's read loop), without allocating. Safe on nil.
func (b *Bus) Output(runtimeID string, data []byte) {
	if b == nil {
		return
	}
	if p := b.out.Load(); p != nil {
		for _, r := range *p {
			r.PaneOutput(runtimeID, data)
		}
	}
}
