package store

import (
	"time"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

// Idle release. bbolt reads the file through a shared read-only mapping, and every page
// a read touches stays mapped into the process (its resident set) until the mapping is
// replaced: after a burst of triggers the store's recent pages are read back (receipts,
// audit, events) and the whole file ends up resident. On a store of 33 MB that was
// 28 MB of the daemon's RSS at idle, more than its heap and its binary together. The
// pages are the kernel's page cache, clean and reclaimable, but they count against the
// daemon. Once the write-behind writer has been idle for IdleAfter, the store drops the
// mapping's page-table entries and then publishes Idle, where the daemon can return
// its own idle heap. How the entries are dropped is the OS's (pageReleaser): on Linux
// madvise MADV_DONTNEED on the shared file mapping; on macOS and the BSDs, where that
// advice only ages the pages, the same range is mapped again from the file in place
// (remapRelease). Either way nothing is lost: a later read maps the page again from the
// page cache.

// DefaultIdleAfter is how long the writer must be idle before the release, when
// Options.IdleAfter is 0.
const DefaultIdleAfter = 10 * time.Second

// armIdle (re)starts the idle countdown; called with db.later.mu held when the writer
// stops.
func (db *DB) armIdle() {
	if db.idleAfter < 0 {
		return
	}
	if db.idleTimer == nil {
		db.idleTimer = time.AfterFunc(db.idleAfter, db.idle)
		return
	}
	db.idleTimer.Reset(db.idleAfter)
}

// idle runs on its own goroutine (the timer's) once the writer has stayed idle. A writer
// that started again meanwhile re-arms the countdown when it stops.
func (db *DB) idle() {
	l := &db.later
	l.mu.Lock()
	if l.running || l.closed {
		l.mu.Unlock()
		return
	}
	db.bg.Add(1) // Close waits: no release or callback after it returns
	l.mu.Unlock()
	defer db.bg.Done()
	db.ReleaseMapped()
	nudge.Publish(db.bus, Idle{})
}

// ReleaseMapped drops the store's file pages from the process's resident set (see
// "Idle release" above). It costs a later read a minor page fault per page it touches
// again; the store does it by itself after IdleAfter of idle writes.
func (db *DB) ReleaseMapped() {
	// Inside a read transaction: bbolt cannot remap (move the mapping) while one is open,
	// so the range below is the live mapping for the whole call.
	_ = db.bolt.View(func(tx *bolt.Tx) error {
		db.releaser.release(db.path, tx.DB().Info().Data, tx.Size())
		return nil
	})
}

// pageReleaser drops the page-table entries of size bytes of bbolt's read-only shared
// mapping of the file at path, which starts at data (best effort).
type pageReleaser interface {
	release(path string, data uintptr, size int64)
}
