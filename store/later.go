package store

import (
	"sync"
	"time"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

// Write-behind: the *Later methods queue a write and return at once; one goroutine
// applies the queue in order, as many writes per transaction as have queued up (one
// fsync for the lot). They are for state that may lag a moment behind memory —
// runtime status, readiness, a trigger's later receipt states — never for a record
// that must be durable before its caller answers (CreateTrigger, a spawn). Flush waits
// for everything queued before it; Close flushes. Lazy writes (PutRuntimeLazy,
// AppendEventsLater) may wait up to a second for a commit; any other write or a Flush
// takes them along at once. A write that fails (its trigger is
// gone, say) is reported (LaterFailed) and skipped; the others still commit.
//
// A commit that fails (a full disk, an I/O error) loses nothing: its writes stay first
// in the queue and are retried with backoff, the creates among them stay in the create
// log, and the store reports itself unavailable (Unavailable, HealthChanged) so that
// no new trigger is accepted until a commit succeeds again.

type laterOp struct {
	name    string
	created string // for a CreateTriggerQuick: the trigger id leaving the create log
	fn      func(tx *bolt.Tx) error
	// after, if set, is told once what became of the op: nil once it committed, fn's
	// error if it was dropped. It is not called for an op dropped by a Close while
	// commits fail. It runs on the writer's goroutine, outside the queue's lock.
	after func(err error)

	// A write of a whole record (PutRuntimeLater, PutGateLater, PutTriggerLater) names
	// it in key. In one batch only the last op of a key writes its record: an earlier one
	// is superseded and runs light instead of fn (nil: nothing; a trigger's audit
	// records are still appended, in order). A fan-out's trigger went through injected,
	// submitted and acked within one batch, and its runtime through three states: each
	// written once, not three times (a JSON encode and a B-tree put each).
	key   string
	light func(tx *bolt.Tx) error

	// lazy marks a write that may wait up to lazyGather for a commit: state that is
	// recomputed at start (a runtime's readiness) and events (kept in memory until they
	// commit). A batch of lazy writes alone commits once per lazyGather; the first eager
	// write (or a Flush) cuts the wait short and they all ride its commit.
	lazy bool
}

// later is the DB's write-behind queue. Its one goroutine (drain) is started by enqueue
// when there is work and ends when the queue is empty; Close stops its waits and joins
// it (wg), so no write or callback happens after Close returns.
type later struct {
	mu       sync.Mutex
	cond     *sync.Cond
	stop     chan struct{} // closed by Close: drain's waits end at once
	wg       sync.WaitGroup
	ops      []laterOp
	queued   uint64 // ops ever queued
	applied  uint64 // ops ever applied (committed or failed)
	running  bool
	closed   bool
	flushers int           // Flushes waiting: commit without gathering
	eager    bool          // an op that is not lazy is queued
	wake     chan struct{} // cap 1: an eager op or a Flush ends a lazy gather
	bus      *nudge.Bus    // LaterFailed, HealthChanged

	failing    error  // the last commit's error while commits fail; nil when healthy
	commitErrs uint64 // failed commits, ever
}

// Commit retry backoff while commits fail.
const (
	retryMin = 50 * time.Millisecond
	retryMax = time.Second
)

func (db *DB) enqueue(op laterOp) {
	l := &db.later
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	if l.closed {
		l.report(op.name, ErrClosed)
		return
	}
	l.ops = append(l.ops, op)
	l.queued++
	if !op.lazy && !l.eager {
		l.eager = true
		l.poke()
	}
	if !l.running {
		l.running = true
		l.wg.Add(1)
		go db.drain()
	}
}

// init makes the queue's channels and condition. l.mu is held.
func (l *later) init() {
	if l.cond == nil {
		l.cond = sync.NewCond(&l.mu)
		l.stop = make(chan struct{})
		l.wake = make(chan struct{}, 1)
	}
}

// poke ends a lazy gather. l.mu is held.
func (l *later) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// laterGather is how long the writer lets writes gather before a commit: fewer fsyncs,
// so a synchronous commit (a trigger's create) rarely queues behind one. A Flush does not
// wait for it. lazyGather is the same for a queue of lazy writes only: a busy fleet's
// readiness changes and events commit about once a second, not once per change.
const (
	laterGather = 5 * time.Millisecond
	lazyGather  = time.Second
)

// drain applies queued ops until the queue is empty.
func (db *DB) drain() {
	l := &db.later
	defer l.wg.Done()
	backoff := retryMin
	for {
		l.mu.Lock()
		l.gather()
		ops, ok := db.takeBatch()
		l.mu.Unlock()
		if !ok {
			return
		}
		retry, err := db.commitBatch(ops)
		if l.account(len(ops), retry, err) {
			l.sleep(backoff)
			backoff = min(2*backoff, retryMax)
			continue
		}
		backoff = retryMin
	}
}

// gather lets writes gather before a commit (lazyGather while only lazy writes are
// queued, then laterGather), unless a Flush waits, commits fail or the queue is closed.
// l.mu is held; it is released while gather waits.
func (l *later) gather() {
	if l.flushers == 0 && l.failing == nil && !l.closed && !l.eager {
		l.mu.Unlock()
		l.sleepWake(lazyGather) // an eager write or a Flush ends it
		l.mu.Lock()
	}
	if l.flushers == 0 && l.failing == nil && !l.closed {
		l.mu.Unlock()
		l.sleep(laterGather)
		l.mu.Lock()
	}
}

// takeBatch takes every queued op for one commit. When there is none, or the queue was
// closed while commits fail, it stops the writer instead (the idle countdown armed,
// waiters woken) and returns ok false. db.later.mu is held.
func (db *DB) takeBatch() (ops []laterOp, ok bool) {
	l := &db.later
	ops = l.ops
	l.ops = nil
	l.eager = false
	select {
	case <-l.wake: // a stale poke would cut the next lazy gather short
	default:
	}
	if len(ops) == 0 || (l.closed && l.failing != nil) {
		// Closed while commits fail: what is left is dropped here, but the creates
		// among it are still in the create log, replayed at the next Open.
		l.running = false
		l.applied += uint64(len(ops))
		if !l.closed {
			db.armIdle()
		}
		l.cond.Broadcast()
		return nil, false
	}
	return ops, true
}

// commitBatch commits ops, settles the create log and tells the committed ops' after.
// If the commit failed it returns the ops to retry and why.
func (db *DB) commitBatch(ops []laterOp) (retry []laterOp, err error) {
	committed, retry, err := db.applyLater(ops)
	db.triggers.settleWAL(committed)
	for _, op := range committed {
		if op.after != nil {
			op.after(nil)
		}
	}
	return retry, err
}

// account records what became of a batch of n ops. With ops to retry it puts them back
// at the head of the queue, marks commits failing (reporting the first failure of a run
// as LaterFailed and HealthChanged) and returns true; otherwise it marks commits healthy
// again. It takes l.mu and wakes the waiters (Flush, Settle).
func (l *later) account(n int, retry []laterOp, err error) (failed bool) {
	l.mu.Lock()
	l.applied += uint64(n - len(retry))
	if retry != nil {
		l.ops = append(retry, l.ops...)
		l.commitErrs++
		started := l.failing == nil
		l.failing = err
		l.cond.Broadcast()
		l.mu.Unlock()
		if started {
			for _, op := range retry {
				l.report(op.name, err)
			}
			l.health(err)
		}
		return true
	}
	recovered := l.failing != nil
	l.failing = nil
	l.cond.Broadcast()
	l.mu.Unlock()
	if recovered {
		l.health(nil)
	}
	return false
}

// applyLater runs ops in one transaction; an op that fails is rolled out (reported and
// dropped) by running the batch again without it. It returns the ops that are done
// (committed or dropped), and if the commit itself failed, the ops to retry and why.
func (db *DB) applyLater(ops []laterOp) (done, retry []laterOp, err error) {
	var dropped []laterOp
	for len(ops) > 0 {
		if db.failCommit != nil { // tests: a disk that refuses writes
			if err := db.failCommit(); err != nil {
				return dropped, ops, err
			}
		}
		bad := -1
		var badErr error
		last := lastOfKey(ops)
		err := db.bolt.Update(func(tx *bolt.Tx) error {
			for i, op := range ops {
				fn := op.fn
				if op.key != "" && last[op.key] != i {
					if fn = op.light; fn == nil {
						continue // superseded by a later write of the same record
					}
				}
				if err := fn(tx); err != nil {
					bad, badErr = i, err
					return err
				}
			}
			return nil
		})
		if err == nil {
			return append(ops, dropped...), nil, nil
		}
		if bad < 0 { // the commit itself failed: nothing of the batch was written
			return dropped, ops, err
		}
		db.later.report(ops[bad].name, badErr)
		if op := ops[bad]; op.after != nil {
			op.after(badErr)
		}
		dropped = append(dropped, laterOp{name: ops[bad].name, created: ops[bad].created})
		ops = append(ops[:bad:bad], ops[bad+1:]...)
	}
	return dropped, nil, nil
}

// lastOfKey maps each key of ops to the index of its last op (nil if no op has a key).
func lastOfKey(ops []laterOp) map[string]int {
	var last map[string]int
	for i, op := range ops {
		if op.key == "" {
			continue
		}
		if last == nil {
			last = make(map[string]int)
		}
		last[op.key] = i
	}
	return last
}

// sleep waits for d, or until Close.
// sleepWake is sleep that a poke also ends.
func (l *later) sleepWake(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.stop:
	case <-l.wake:
	}
}

func (l *later) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.stop:
	}
}

func (l *later) health(err error) { nudge.Publish(l.bus, HealthChanged{Err: err}) }

// Unavailable returns why the store cannot write (a commit failed and has not succeeded
// since), or nil. New triggers are refused meanwhile (ErrUnavailable).
func (db *DB) Unavailable() error {
	db.later.mu.Lock()
	defer db.later.mu.Unlock()
	return db.later.failing
}

// CommitErrors is the number of failed write-behind commits since Open.
func (db *DB) CommitErrors() uint64 {
	db.later.mu.Lock()
	defer db.later.mu.Unlock()
	return db.later.commitErrs
}

func (l *later) report(op string, err error) { nudge.Publish(l.bus, LaterFailed{Op: op, Err: err}) }

// Flush waits until every write queued before it has been applied, or until commits
// fail (it does not wait for a full disk to drain: see Unavailable).
func (db *DB) Flush() {
	l := &db.later
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cond == nil {
		return
	}
	target := l.queued
	l.flushers++
	l.poke()
	for l.applied < target && l.failing == nil {
		l.cond.Wait()
	}
	l.flushers--
}

// Settle waits, like Flush, until every write queued before it has been applied (or
// commits fail), but without cutting the writer's gather short: it rides the next batch
// instead of forcing a commit of its own. For a caller that only needs to know when its
// writes are in (to drop an in-memory copy), not to make them durable now.
func (db *DB) Settle() {
	l := &db.later
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cond == nil {
		return
	}
	target := l.queued
	for l.applied < target && l.failing == nil {
		l.cond.Wait()
	}
}

// closeLater flushes, refuses further writes and joins the drain goroutine: what was
// queued is committed, or dropped if commits fail (its creates stay in the create log).
func (db *DB) closeLater() {
	db.Flush()
	l := &db.later
	l.mu.Lock()
	if !l.closed && l.stop != nil {
		close(l.stop)
	}
	l.closed = true
	if db.idleTimer != nil {
		db.idleTimer.Stop()
	}
	l.mu.Unlock()
	l.wg.Wait()
}
