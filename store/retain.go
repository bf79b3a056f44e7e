package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

// Retention. A finished trigger (Closed) whose record was last written more than
// Retention.Window ago is removed, with its attempts and its id, in small transactions
// (Retention.Batch triggers each, a pause between them), so a pass never holds bbolt's
// writer for long and the write-behind commits, the create log and the API's reads go on
// around it. An open trigger is never removed, however old. In place of each removed
// trigger a tombstone is kept (its id, workspace, when it finished and when it was
// removed; about 60 bytes against a record's kilobytes): GetTrigger of that id returns an
// *AgedOutError (which is ErrNotFound) saying so, and the pipeline refuses a new trigger
// under that id. Tombstones are themselves removed after Retention.Tombstones; the id is
// then unknown. The audit log is sealed into archive segments by the same pass
// (auditseal.go). Between passes bbolt reuses the freed pages, so the file stops growing
// once the window is full; Open compacts a file that has much free space (compact.go).

// Retention is what the store keeps. The zero value keeps everything (no pass runs).
type Retention struct {
	// Window: a finished trigger last written more than Window ago is removed. 0 keeps
	// every trigger.
	Window time.Duration
	// Tombstones: how long a removed trigger's id is remembered (GetTrigger says it aged
	// out; a repeat is refused). 0 means Window.
	Tombstones time.Duration
	// AuditDir: where sealed audit segments are written (created 0700). "" never seals:
	// the whole audit log stays in the store.
	AuditDir string
	// AuditWindow: audit records older than this are sealed into AuditDir. 0 means
	// Window (with both 0 nothing is sealed).
	AuditWindow time.Duration
	// Every is the time between passes (the first comes a minute after Open, or Every if
	// shorter). 0 means DefaultRetainEvery.
	Every time.Duration
	// Batch is how many triggers one transaction removes. 0 means DefaultRetainBatch.
	Batch int
	// Pause is the rest between two transactions of a pass. 0 means DefaultRetainPause.
	Pause time.Duration
	// Watched makes the passes run also when nothing is to be removed (they then write
	// nothing), so a subscriber of RetainStats that watches the file's size hears every
	// Every (what each pass did is published on Options.Bus; a pass that failed has Err
	// set).
	Watched bool
}

// Retention defaults.
const (
	DefaultRetainEvery = 10 * time.Minute
	DefaultRetainBatch = 256
	DefaultRetainPause = 5 * time.Millisecond
	retainFirst        = time.Minute // the first pass after Open, at the latest
)

func (r Retention) withDefaults() Retention {
	if r.Tombstones <= 0 {
		r.Tombstones = r.Window
	}
	if r.AuditWindow <= 0 {
		r.AuditWindow = r.Window
	}
	if r.Every <= 0 {
		r.Every = DefaultRetainEvery
	}
	if r.Batch <= 0 {
		r.Batch = DefaultRetainBatch
	}
	if r.Pause <= 0 {
		r.Pause = DefaultRetainPause
	}
	return r
}

// active reports whether r removes or seals anything (Open then starts the loop).
func (r Retention) active() bool { return r.Window > 0 || r.sealing() }

// sealing reports whether r seals the audit log.
func (r Retention) sealing() bool { return r.AuditDir != "" && (r.AuditWindow > 0 || r.Window > 0) }

// RetainStats is what one retention pass did.
type RetainStats struct {
	Triggers     int    // finished triggers removed
	Attempts     int    // their attempts removed
	Tombstones   int    // old tombstones removed
	AuditSealed  int    // audit records moved to archive segments
	Segments     int    // segments written
	Transactions int    // write transactions used (a pass with nothing to do uses none)
	Err          error  // why the pass stopped early, if it did
	AuditThrough uint64 // the last sealed audit seq (0 if none sealed)
}

// AgedOutError is GetTrigger's answer for a trigger that retention removed while its
// tombstone is kept. It is ErrNotFound to errors.Is.
type AgedOutError struct {
	TriggerID string
	Workspace string
	Finished  time.Time // when the trigger was last written (it had finished)
	Removed   time.Time // when retention removed it
}

func (e *AgedOutError) Error() string {
	return fmt.Sprintf("trigger %s aged out: it finished %s and was removed from the store %s (past the retention window)",
		e.TriggerID, e.Finished.UTC().Format(time.RFC3339), e.Removed.UTC().Format(time.RFC3339))
}

// Unwrap makes an AgedOutError ErrNotFound.
func (e *AgedOutError) Unwrap() error { return ErrNotFound }

var (
	bucketAged      = []byte("aged")       // trigger_id -> finished (8) + removed (8) unix nanos BE + workspace
	bucketAgedOrder = []byte("aged_order") // removed (8) + trigger_id -> nothing: tombstones oldest first
)

// agedOut returns the tombstone of id, or nil.
func agedOut(tx *bolt.Tx, id string) *AgedOutError {
	b := tx.Bucket(bucketAged)
	if b == nil {
		return nil
	}
	v := b.Get([]byte(id))
	if len(v) < 16 {
		return nil
	}
	be := binary.BigEndian
	return &AgedOutError{TriggerID: id, Workspace: string(v[16:]),
		Finished: time.Unix(0, int64(be.Uint64(v))).UTC(), Removed: time.Unix(0, int64(be.Uint64(v[8:]))).UTC()}
}

// Retain runs one retention pass now (the store's own goroutine runs them every
// Retention.Every): it removes the finished triggers past r.Window (if set), then the
// tombstones past r.Tombstones, then seals the audit records past r.AuditWindow into
// r.AuditDir (if set).
// Each step is many short transactions; ctx ends the pass between two of them. What a
// pass removed is gone even if a later step fails.
func (db *DB) Retain(ctx context.Context, r Retention) RetainStats {
	var st RetainStats
	r = r.withDefaults()
	now := db.now()
	if r.Window > 0 {
		st.Err = db.retainTriggers(ctx, r, now.Add(-r.Window), &st)
		if st.Err == nil {
			st.Err = db.trimTombstones(ctx, r, now.Add(-r.Tombstones), &st)
		}
	}
	if st.Err == nil && r.sealing() {
		st.Err = db.audit.seal(ctx, r, now.Add(-r.AuditWindow), &st)
	}
	return st
}

// TriggersCreated returns how many triggers the store has ever created, those retention
// removed included: 0 only for a store that never held one.
func (tg *Triggers) TriggersCreated() (uint64, error) {
	var n uint64
	err := tg.db.view("triggers created", func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketTriggers).Sequence()
		return nil
	})
	return n, err
}

// rest waits r.Pause between two transactions, or returns ctx's error.
func rest(ctx context.Context, r Retention) error {
	t := time.NewTimer(r.Pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retainTriggers removes finished triggers last written before cut, oldest created
// first, r.Batch per transaction. Triggers are walked in creation order and the walk
// ends at the first one created at or after cut (it cannot have finished before).
func (db *DB) retainTriggers(ctx context.Context, r Retention, cut time.Time, st *RetainStats) error {
	var from []byte // the next key to look at
	for {
		next, removed, attempts, err := db.retainBatch(from, cut, r.Batch)
		st.Triggers += removed
		st.Attempts += attempts
		if removed > 0 {
			st.Transactions++
		}
		if err != nil || next == nil {
			return err
		}
		from = next
		if err := rest(ctx, r); err != nil {
			return err
		}
	}
}

// retainBatch removes at most batch finished triggers, looking at no more than 8*batch
// from key from on. It returns the key to go on from (nil: the walk is over). It looks
// in a read transaction first and writes only when there is something to remove, so a
// pass with nothing to do neither commits nor fsyncs.
func (db *DB) retainBatch(from []byte, cut time.Time, batch int) (next []byte, removed, attempts int, err error) {
	var found int
	err = db.view("retain triggers", func(tx *bolt.Tx) error {
		doomed, _, n, err := retainScan(tx, from, cut, batch)
		found, next = len(doomed), n
		return err
	})
	if err != nil || found == 0 {
		return next, 0, 0, err
	}
	now := db.now()
	err = db.update("retain triggers", func(tx *bolt.Tx) error {
		doomed, recs, n, err := retainScan(tx, from, cut, batch)
		removed, attempts, next = 0, 0, n
		if err != nil {
			return err
		}
		for i, key := range doomed {
			n, err := removeTriggerTx(tx, key, &recs[i], now)
			if err != nil {
				return err
			}
			attempts += n
		}
		removed = len(doomed)
		return nil
	})
	return next, removed, attempts, err
}

// retainScan finds at most batch finished triggers last written before cut, from key
// from on (nil: the first), looking at no more than 8*batch; next is where to go on.
func retainScan(tx *bolt.Tx, from []byte, cut time.Time, batch int) (doomed [][]byte, recs []nudge.Trigger, next []byte, err error) {
	c := tx.Bucket(bucketTriggers).Cursor()
	k, v := c.First()
	if from != nil {
		k, v = c.Seek(from)
	}
	for looked := 0; k != nil; k, v = c.Next() {
		if looked++; looked > 8*batch || len(doomed) >= batch {
			return doomed, recs, bytes.Clone(k), nil
		}
		var t nudge.Trigger
		if err := json.Unmarshal(v, &t); err != nil {
			return nil, nil, nil, fmt.Errorf("decode trigger %x: %w", k, err)
		}
		if !t.CreatedAt.Before(cut) {
			break // created after the cut: neither it nor a later one finished before it
		}
		if t.Closed && t.UpdatedAt.Before(cut) {
			doomed, recs = append(doomed, bytes.Clone(k)), append(recs, t)
		}
	}
	return doomed, recs, nil, nil
}

// removeTriggerTx removes trigger t (stored under key) with its id, open-index entry and
// attempts, and leaves its tombstone. It returns the number of attempts removed.
func removeTriggerTx(tx *bolt.Tx, key []byte, t *nudge.Trigger, now time.Time) (int, error) {
	if err := tx.Bucket(bucketTriggers).Delete(key); err != nil {
		return 0, err
	}
	if err := tx.Bucket(bucketOpen).Delete(key); err != nil {
		return 0, err
	}
	ids := tx.Bucket(bucketTriggerIDs)
	if bytes.Equal(ids.Get([]byte(t.TriggerID)), key) {
		if err := ids.Delete([]byte(t.TriggerID)); err != nil {
			return 0, err
		}
	}
	n, err := removeAttemptsTx(tx.Bucket(bucketAttempts), t.TriggerID)
	if err != nil {
		return n, err
	}
	return n, putTombstone(tx, t, now)
}

func removeAttemptsTx(b *bolt.Bucket, id string) (int, error) {
	var doomed [][]byte
	c := b.Cursor()
	for k, _ := c.Seek([]byte(id)); k != nil && bytes.HasPrefix(k, []byte(id)); k, _ = c.Next() {
		if len(k) == len(id)+8 {
			doomed = append(doomed, bytes.Clone(k))
		}
	}
	for _, k := range doomed {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(doomed), nil
}

func putTombstone(tx *bolt.Tx, t *nudge.Trigger, now time.Time) error {
	v := make([]byte, 16, 16+len(t.WorkspaceID))
	binary.BigEndian.PutUint64(v, uint64(t.UpdatedAt.UnixNano()))
	binary.BigEndian.PutUint64(v[8:], uint64(now.UnixNano()))
	v = append(v, t.WorkspaceID...)
	aged := tx.Bucket(bucketAged)
	if old := aged.Get([]byte(t.TriggerID)); len(old) >= 16 {
		// An id used again after its first tombstone went: one tombstone, the newest.
		if err := tx.Bucket(bucketAgedOrder).Delete(append(bytes.Clone(old[8:16]), t.TriggerID...)); err != nil {
			return err
		}
	}
	if err := aged.Put([]byte(t.TriggerID), v); err != nil {
		return err
	}
	return tx.Bucket(bucketAgedOrder).Put(append(u64(uint64(now.UnixNano())), t.TriggerID...), nil)
}

// trimTombstones removes the tombstones of triggers removed before cut.
func (db *DB) trimTombstones(ctx context.Context, r Retention, cut time.Time, st *RetainStats) error {
	for {
		n, err := db.trimTombstoneBatch(cut, 8*r.Batch)
		st.Tombstones += n
		if n > 0 {
			st.Transactions++
		}
		if err != nil || n < 8*r.Batch {
			return err
		}
		if err := rest(ctx, r); err != nil {
			return err
		}
	}
}

func (db *DB) trimTombstoneBatch(cut time.Time, batch int) (n int, err error) {
	due := false // the oldest tombstone is past cut: only then write
	if err := db.view("trim tombstones", func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bucketAgedOrder).Cursor().First()
		due = len(k) >= 8 && int64(binary.BigEndian.Uint64(k)) < cut.UnixNano()
		return nil
	}); err != nil || !due {
		return 0, err
	}
	err = db.update("trim tombstones", func(tx *bolt.Tx) error {
		n = 0
		order, aged := tx.Bucket(bucketAgedOrder), tx.Bucket(bucketAged)
		var doomed [][]byte
		c := order.Cursor()
		for k, _ := c.First(); k != nil && len(doomed) < batch; k, _ = c.Next() {
			if len(k) < 8 || int64(binary.BigEndian.Uint64(k)) >= cut.UnixNano() {
				break
			}
			doomed = append(doomed, bytes.Clone(k))
		}
		for _, k := range doomed {
			if err := order.Delete(k); err != nil {
				return err
			}
			if v := aged.Get(k[8:]); len(v) >= 16 && bytes.Equal(v[8:16], k[:8]) {
				if err := aged.Delete(k[8:]); err != nil {
					return err
				}
			}
		}
		n = len(doomed)
		return nil
	})
	return n, err
}

// retainLoop runs a pass every r.Every until ctx ends. Started by Open, joined by Close.
func (db *DB) retainLoop(ctx context.Context, r Retention) {
	defer db.retainWG.Done()
	r = r.withDefaults()
	// The first pass comes a minute after Open (sooner if Every is shorter): a daemon
	// that never stays up for Every still trims.
	t := time.NewTimer(min(r.Every, retainFirst))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			t.Reset(r.Every)
		}
		st := db.Retain(ctx, r)
		if ctx.Err() != nil || errors.Is(st.Err, ErrClosed) {
			return
		}
		if st.Transactions > 0 {
			db.afterWrites() // the pages a pass wrote go back at the next idle release
		}
		nudge.Publish(db.bus, st) // what the pass did; a pass that failed has Err set
	}
}

// afterWrites arms the idle release for writes made outside the write-behind queue.
func (db *DB) afterWrites() {
	l := &db.later
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.running && !l.closed {
		db.armIdle()
	}
}
