package inject

import (
	"cmp"
	"crypto/sha256"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nudgehq/nudge/store"
)

// Both gates are durable (docs/orchestrators.md, "Receipts": loop-guard blocks and rate-limit windows are durable): every change is written behind to the
// store (a loop-guard block at once, before the trigger that tripped it is answered), and
// Pipeline.Open loads them, so a daemon restart neither unblocks a blocked thread nor
// resets a rate-limit window. db nil keeps them in memory only.

// gateStore keeps the gates' state (*store.Gates).
type gateStore interface {
	PutGate(g store.Gate) error
	PutGateLater(g store.Gate)
	DeleteGateLater(kind, key string)
	DeleteGatesLater(kind, prefix string)
}

// rateLimiter allows n deliveries per window per key, sliding: a thread of a runtime
// (kind store.GateRate), or a runtime over all its threads (store.GateRuntimeRate).
type rateLimiter struct {
	db     gateStore
	kind   string
	mu     sync.Mutex
	n      int
	window time.Duration
	hits   map[string][]time.Time
}

func newRateLimiter(kind string, n int, window time.Duration) *rateLimiter {
	return &rateLimiter{kind: kind, n: n, window: window, hits: map[string][]time.Time{}}
}

// check reports whether a delivery may happen now, and if not, when the next slot frees.
func (r *rateLimiter) check(key string, now time.Time) (bool, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.prune(key, now)
	if len(h) < r.n {
		return true, time.Time{}
	}
	return false, h[0].Add(r.window)
}

// take records a delivery.
func (r *rateLimiter) take(key string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hits[key] = append(r.prune(key, now), now)
	if r.db != nil {
		r.db.PutGateLater(store.Gate{Kind: r.kind, Key: key, Hits: slices.Clone(r.hits[key]), UpdatedAt: now})
	}
}

// load restores the deliveries still within the window from stored gates, each under
// its canonical key (canon: a key a daemon before runtime keys wrote under the agent_id
// joins its runtime's), and writes a moved one back under it.
func (r *rateLimiter) load(gates []store.Gate, now time.Time, canon func(string) string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range gates {
		if g.Kind != r.kind {
			continue
		}
		key := canon(g.Key)
		_, merged := r.hits[key]
		r.hits[key] = append(r.hits[key], g.Hits...)
		slices.SortFunc(r.hits[key], time.Time.Compare)
		if r.db == nil {
			r.prune(key, now)
			continue
		}
		if key != g.Key {
			r.db.DeleteGateLater(r.kind, g.Key)
		}
		switch {
		case r.prune(key, now) == nil:
			r.db.DeleteGateLater(r.kind, key)
		case merged || key != g.Key:
			r.db.PutGateLater(store.Gate{Kind: r.kind, Key: key, Hits: slices.Clone(r.hits[key]), UpdatedAt: now})
		}
	}
}

func (r *rateLimiter) prune(key string, now time.Time) []time.Time {
	h := r.hits[key]
	i := 0
	for i < len(h) && now.Sub(h[i]) >= r.window {
		i++
	}
	h = h[i:]
	if len(h) == 0 {
		delete(r.hits, key)
		return nil
	}
	r.hits[key] = h
	return h
}

// loopGuard blocks a thread that keeps being triggered without progress: after turns
// deliveries, or after the same prompt repeats times in a row (seed 000 §14).
type loopGuard struct {
	db      gateStore
	mu      sync.Mutex
	turns   int
	repeats int
	threads map[string]*threadLoop
}

type threadLoop struct {
	turns   int
	last    [32]byte
	same    int
	blocked string // why, when blocked
}

func newLoopGuard(turns, repeats int) *loopGuard {
	return &loopGuard{turns: turns, repeats: repeats, threads: map[string]*threadLoop{}}
}

// blocked reports whether key is auto-blocked and why.
func (g *loopGuard) blocked(key string) (bool, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t := g.threads[key]; t != nil && t.blocked != "" {
		return true, t.blocked
	}
	return false, ""
}

// turn counts one delivery of prompt on key and reports whether that trips the guard
// for the deliveries after it.
func (g *loopGuard) turn(key, prompt string) (tripped bool, why string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.threads[key]
	if t == nil {
		t = &threadLoop{}
		g.threads[key] = t
	}
	sum := sha256.Sum256([]byte(prompt))
	if t.turns > 0 && sum == t.last {
		t.same++
	} else {
		t.same = 1
	}
	t.last = sum
	t.turns++
	switch {
	case t.same >= g.repeats:
		t.blocked = "the same prompt was delivered repeatedly without progress"
	case t.turns >= g.turns:
		t.blocked = "too many turns without progress"
	}
	g.save(key, t)
	return t.blocked != "", t.blocked
}

// save writes a thread's counters behind; a block is made durable at once.
func (g *loopGuard) save(key string, t *threadLoop) {
	if g.db == nil {
		return
	}
	st := store.Gate{Kind: store.GateLoop, Key: key, Turns: t.turns, Same: t.same, Last: t.last[:],
		Blocked: t.blocked, UpdatedAt: time.Now()}
	if t.blocked == "" {
		g.db.PutGateLater(st)
		return
	}
	g.db.PutGate(st)
}

// load restores the threads' counters and blocks from stored gates, each under its
// canonical key (canon, as rateLimiter.load): a block under either name stays a block.
func (g *loopGuard) load(gates []store.Gate, canon func(string) string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, st := range gates {
		if st.Kind != store.GateLoop {
			continue
		}
		t := &threadLoop{turns: st.Turns, same: st.Same, blocked: st.Blocked}
		copy(t.last[:], st.Last)
		key := canon(st.Key)
		prev := g.threads[key] // the same thread under the agent's other name
		if prev != nil {
			t = mergeLoops(prev, t)
		}
		g.threads[key] = t
		if key != st.Key && g.db != nil {
			g.db.DeleteGateLater(store.GateLoop, st.Key)
		}
		if (key != st.Key || prev != nil) && g.db != nil {
			g.save(key, t)
		}
	}
}

// mergeLoops is one thread's counters kept under two names: the more turns, and a block.
func mergeLoops(a, b *threadLoop) *threadLoop {
	m := *a
	if b.turns > a.turns {
		m = *b
	}
	m.blocked = cmp.Or(a.blocked, b.blocked)
	return &m
}

// progress resets the counters of key (a heartbeat cursor advance, an explicit unblock).
func (g *loopGuard) progress(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.threads, key)
	if g.db != nil {
		g.db.DeleteGateLater(store.GateLoop, key)
	}
}

// keysOf returns the keys of thread's counters, for every agent, sorted.
func (g *loopGuard) keysOf(thread string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for k := range g.threads {
		if strings.HasSuffix(k, "\x00"+thread) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// progressPrefix resets every key starting with prefix (all threads of an agent).
func (g *loopGuard) progressPrefix(prefix string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k := range g.threads {
		if strings.HasPrefix(k, prefix) {
			delete(g.threads, k)
		}
	}
	if g.db != nil {
		g.db.DeleteGatesLater(store.GateLoop, prefix)
	}
}

// restoreGates takes the rate limiter's and the loop guard's state back from the store
// (a daemon restart neither resets a rate window nor unblocks a thread); from now on they
// write their changes there.
func (p *Pipeline) restoreGates(gates []store.Gate, now time.Time) {
	if p.deps.Store != nil {
		db := p.deps.Store.Gates()
		p.gate.rate.db, p.gate.perRT.db, p.gate.loops.db = db, db, db
	}
	p.gate.rate.load(gates, now, p.canonKey)
	p.gate.perRT.load(gates, now, p.canonKey)
	p.gate.loops.load(gates, p.canonKey)
}

// canonKey is a stored gate key with its agent named as agentKey names it: its
// runtime's role for an agent_id.
func (p *Pipeline) canonKey(key string) string {
	agent, thread, threaded := strings.Cut(key, "\x00")
	ws, name, ok := strings.Cut(agent, "/")
	if !ok {
		return key
	}
	agent = p.agentKey(ws, name)
	if threaded {
		return agent + "\x00" + thread
	}
	return agent
}
