package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

// Options configures Open. The zero value is the production setting.
type Options struct {
	// Timeout is how long Open waits for the file lock. 0 means 1s. A second daemon on
	// the same file gets ErrLocked after this long.
	Timeout time.Duration
	// NoSync skips fdatasync on commit (bbolt NoSync). Safe against kill -9, not against
	// power loss: for tests and benchmarks only. See the package doc.
	NoSync bool
	// Now is the clock used for CreatedAt, UpdatedAt and audit times. nil means time.Now.
	Now func() time.Time
	// Bus is where the store reports what happens behind its callers' backs: a
	// write-behind write that failed (LaterFailed; see PutRuntimeLater), write-behind
	// commits that start failing or succeed again (HealthChanged; see DB.Unavailable),
	// the writer gone idle (Idle) and each retention pass (RetainStats). nil means none
	// is reported.
	Bus *nudge.Bus
	// CheckTimeout bounds how long Open waits for the consistency check (bbolt's page
	// check plus a decode of every record); a check that needs longer finishes in the
	// background and reports damage (LaterFailed). 0 means DefaultCheckTimeout; a
	// negative value skips the check.
	CheckTimeout time.Duration
	// IdleAfter is how long the write-behind writer must be idle before the store drops
	// its file pages from the process's resident set (see ReleaseMapped) and publishes
	// Idle. 0 means DefaultIdleAfter; a negative value never does.
	IdleAfter time.Duration
	// Retain is what the store keeps of finished triggers, their tombstones and the
	// audit log (retain.go). The zero value keeps everything and runs no pass.
	Retain Retention
	// CompactFree: Open compacts the file (compact.go) when its free pages come to at
	// least this many bytes and to half the file or more. 0 means DefaultCompactFree; a
	// negative value never compacts.
	CompactFree int64
}

// DefaultCheckTimeout is the consistency check's budget when Options.CheckTimeout is 0.
const DefaultCheckTimeout = 10 * time.Second

// DefaultTimeout is the lock wait used when Options.Timeout is 0.
const DefaultTimeout = time.Second

// DB is nudge's durable state in one bbolt file. It is safe for concurrent use. The
// process that calls Open owns it and calls Close.
//
// DB itself owns the file (Open, Close, the consistency check), the write-behind queue
// (Flush, Settle, Unavailable) and the idle release. The records are kept by one type
// per entity, which the DB hands out: db.Triggers().GetTrigger(id). Open sets them up;
// they share the file and the queue and live as long as the DB. A consumer declares the
// small interface it uses of one of them (events.Log is *store.Events).
type DB struct {
	triggers  Triggers
	runtimes  Runtimes
	events    Events
	audit     AuditLog
	gates     Gates
	schedules Schedules
	meta      Meta

	bolt *bolt.DB
	path string
	now  func() time.Time

	closeOnce sync.Once
	closeErr  error
	later     later
	bg        sync.WaitGroup // a consistency check that outlived Open, an idle release; joined by Close

	idleAfter time.Duration
	releaser  pageReleaser // the OS's (idle_*.go); a test may set another
	bus       *nudge.Bus   // Options.Bus
	idleTimer *time.Timer  // under later.mu

	failCommit func() error // tests only: fail write-behind commits with this error

	retain     Retention          // Options.Retain
	retainStop context.CancelFunc // ends the retention loop (nil: none runs)
	retainWG   sync.WaitGroup     // the retention loop; joined by Close before the file closes
}

// Bucket names. The layout is private to this package.
var (
	bucketRuntimes   = []byte("runtimes")    // runtime_id -> Runtime JSON
	bucketTriggers   = []byte("triggers")    // seq (8 bytes BE) -> Trigger JSON, creation order
	bucketTriggerIDs = []byte("trigger_ids") // trigger_id -> seq
	bucketOpen       = []byte("open")        // seq -> trigger_id, for triggers not Closed
	bucketAttempts   = []byte("attempts")    // trigger_id + n (8 bytes BE) -> Attempt JSON
	bucketAudit      = []byte("audit")       // seq (NextSequence, 8 bytes BE) -> AuditRecord JSON
	bucketSchedules  = []byte("schedules")   // schedule_id -> Schedule JSON
	bucketMeta       = []byte("meta")        // free-form small state; keys starting with 0x00 are reserved
	bucketGates      = []byte("gates")       // kind 0x00 key -> Gate JSON (added later: created on open)
	bucketEvents     = []byte("events")      // seq (8 bytes BE) -> time (8 bytes BE) + event JSON (added later)
	// bucketAged and bucketAgedOrder (retain.go) hold the tombstones of removed triggers.
)

var allBuckets = [][]byte{bucketRuntimes, bucketTriggers, bucketTriggerIDs, bucketOpen,
	bucketAttempts, bucketAudit, bucketSchedules, bucketMeta, bucketGates, bucketEvents, bucketAged, bucketAgedOrder}

// Open opens (creating if needed) the store at path. The parent directory is created
// with mode 0700 and the file with 0600. If another process holds the file, Open fails
// with ErrLocked once opts.Timeout has passed.
func Open(path string, opts Options) (*DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if fi, err := os.Stat(path); err == nil && fi.Size() == 0 {
		// bbolt would quietly initialise an empty file: a store truncated to nothing
		// would start empty, forgetting every trigger and revocation.
		return nil, damaged(path, errors.New("the file is empty (0 bytes)"))
	}
	bo := &bolt.Options{Timeout: timeout, NoSync: opts.NoSync}
	bdb, err := openBolt(path, bo)
	if err == nil {
		bdb, err = maybeCompact(bdb, path, bo, opts.CompactFree)
		switch {
		case errors.Is(err, errCompactSkipped):
			nudge.Publish(opts.Bus, LaterFailed{Op: "compact store", Err: err})
			err = nil
		case err != nil:
			bdb.Close()
		}
	}
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("open store %s: %w (waited %s; is another nudge serve running on this state dir?)",
			path, ErrLocked, timeout)
	}
	if errors.Is(err, ErrDamaged) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db := &DB{bolt: bdb, path: path, now: opts.Now, idleAfter: opts.IdleAfter, bus: opts.Bus, releaser: releaser}
	db.triggers.db, db.runtimes.db, db.events.db, db.audit.db = db, db, db, db
	db.gates.db, db.schedules.db, db.meta.db = db, db, db
	if db.idleAfter == 0 {
		db.idleAfter = DefaultIdleAfter
	}
	db.later.bus = opts.Bus
	if db.now == nil {
		db.now = time.Now
	}
	if err := db.check(opts.CheckTimeout); err != nil {
		bdb.Close()
		return nil, err
	}
	if err := db.init(); err != nil {
		bdb.Close()
		return nil, err
	}
	if err := db.triggers.openWAL(); err != nil {
		bdb.Close()
		return nil, err
	}
	db.retain = opts.Retain
	if opts.Retain.active() || opts.Retain.Watched {
		ctx, cancel := context.WithCancel(context.Background())
		db.retainStop = cancel
		db.retainWG.Add(1)
		go db.retainLoop(ctx, opts.Retain)
	}
	return db, nil
}

// init makes the file 0600 (it may predate us) and creates the buckets.
func (db *DB) init() error {
	if err := os.Chmod(db.path, 0o600); err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	return db.update("open store", func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("bucket %s: %w", name, err)
			}
		}
		return nil
	})
}

// Close releases the file and its lock. It is idempotent; methods called after Close
// return ErrClosed.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		if db.retainStop != nil {
			db.retainStop() // a pass ends between two transactions
			db.retainWG.Wait()
		}
		db.closeLater()
		if db.Unavailable() == nil {
			// Everything queued was written: the event log was closed cleanly.
			db.closeErr = db.events.closeEvents()
		}
		db.triggers.closeWAL()
		if err := db.bolt.Close(); err != nil { // waits for a check still reading
			db.closeErr = errors.Join(db.closeErr, fmt.Errorf("close store: %w", err))
		}
		db.bg.Wait()
	})
	return db.closeErr
}

// Triggers returns the store's triggers, their attempts and the create log.
func (db *DB) Triggers() *Triggers { return &db.triggers }

// Runtimes returns the store's runtime records.
func (db *DB) Runtimes() *Runtimes { return &db.runtimes }

// Events returns the event log kept for replay.
func (db *DB) Events() *Events { return &db.events }

// AuditLog returns the hash-chained audit log.
func (db *DB) AuditLog() *AuditLog { return &db.audit }

// Gates returns the per-thread trigger gates.
func (db *DB) Gates() *Gates { return &db.gates }

// Schedules returns the schedules.
func (db *DB) Schedules() *Schedules { return &db.schedules }

// Meta returns the small daemon state.
func (db *DB) Meta() *Meta { return &db.meta }

// Path returns the file the store was opened on.
func (db *DB) Path() string { return db.path }

// update runs fn in one read-write transaction, wrapping any error with op.
func (db *DB) update(op string, fn func(*bolt.Tx) error) error {
	return wrapTx(op, db.bolt.Update(fn))
}

// view runs fn in one read-only transaction, wrapping any error with op.
func (db *DB) view(op string, fn func(*bolt.Tx) error) error {
	return wrapTx(op, db.bolt.View(fn))
}

func wrapTx(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bolt.ErrDatabaseNotOpen):
		return fmt.Errorf("%s: %w", op, ErrClosed)
	default:
		return fmt.Errorf("%s: %w", op, err)
	}
}

// appendFill is the FillPercent of the buckets whose keys only grow (NextSequence or
// increasing): a page is split when it is this full, and the left part is never written
// again, so bbolt's default of half a page left half of every page of the audit log, the
// event log and the triggers empty (41-50 % filled, measured: benchmarks/retention_test.go).
const appendFill = 0.95

// u64 encodes n as an 8-byte big-endian key, so keys sort numerically.
func u64(n uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return b[:]
}

// putJSON stores v as JSON under key.
func putJSON(b *bolt.Bucket, key []byte, v any) error {
	buf, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	return b.Put(key, buf)
}

// getJSON decodes the value under key into v; ok is false if the key is absent.
// Decoding copies, so v stays valid after the transaction ends.
func getJSON(b *bolt.Bucket, key []byte, v any) (ok bool, err error) {
	buf := b.Get(key)
	if buf == nil {
		return false, nil
	}
	if err := json.Unmarshal(buf, v); err != nil {
		return true, fmt.Errorf("decode %q: %w", key, err)
	}
	return true, nil
}

// need returns an ErrInvalid error if id is empty.
func need(what, id string) error {
	if id == "" {
		return fmt.Errorf("empty %s: %w", what, ErrInvalid)
	}
	return nil
}
