package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// Compaction. bbolt never gives pages back to the file system: what retention frees is
// reused by later writes but the file keeps its high-water size. Open compacts a file
// whose free pages come to Options.CompactFree bytes or more and to at least half the
// file: bbolt's Compact copies every bucket into a new file beside it (<path>.compact),
// which is fsynced, renamed over the old one, and the directory fsynced. The new file is
// locked (bbolt's flock) before the rename and its handle becomes the store's, so no
// other process can take the file in between. A crash before the rename leaves the old
// file whole (the stale .compact is removed at the next Open); after it, the new file is
// complete and synced. Either way nothing is lost; the create log beside the file is
// not touched.

// DefaultCompactFree is the free space that makes Open compact when
// Options.CompactFree is 0.
const DefaultCompactFree = 32 << 20

// compactTxSize is how many bytes Compact copies per transaction of the new file.
const compactTxSize = 16 << 20

// errCompactSkipped: the copy could not be made (a full disk, say); the store opens on
// the file as it was, and Open reports it (LaterFailed).
var errCompactSkipped = errors.New("compact store: skipped, the store is used as it is")

// maybeCompact returns bdb, or the handle of its compacted copy now at path (bdb then
// closed). bo are the options bdb was opened with. A copy that fails returns bdb and an
// error wrapping errCompactSkipped: the old file is untouched.
func maybeCompact(bdb *bolt.DB, path string, bo *bolt.Options, threshold int64) (*bolt.DB, error) {
	tmp := path + ".compact"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return bdb, fmt.Errorf("%w: %v", errCompactSkipped, err)
	}
	if threshold == 0 {
		threshold = DefaultCompactFree
	}
	free, size := freeBytes(bdb)
	if threshold < 0 || bo.ReadOnly || free < threshold || free*2 < size {
		return bdb, nil
	}
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: bo.Timeout, NoSync: true})
	if err != nil {
		os.Remove(tmp)
		return bdb, fmt.Errorf("%w: %v", errCompactSkipped, err)
	}
	if err := compactInto(dst, bdb, tmp, path); err != nil {
		dst.Close()
		os.Remove(tmp)
		return bdb, fmt.Errorf("%w: %v", errCompactSkipped, err)
	}
	bdb.Close()
	dst.NoSync = bo.NoSync
	return dst, nil
}

// compactInto copies src into dst (at tmp), syncs it and renames it to path. Open's
// pre-check has walked src's page tree already; a fault reading it is an error here, not
// a crash.
func compactInto(dst, src *bolt.DB, tmp, path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("copy: %v", r)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if err := bolt.Compact(dst, src, compactTxSize); err != nil {
		return err
	}
	if err := dst.Sync(); err != nil { // NoSync while copying: one fdatasync at the end
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// freeBytes returns the bytes of the file's free pages and the size its pages reach.
// Info reads the mapping bbolt may replace while a commit grows the file, so it is asked
// inside a read transaction, which holds the mapping in place.
func freeBytes(bdb *bolt.DB) (free, size int64) {
	st := bdb.Stats()
	var pageSize int64
	_ = bdb.View(func(tx *bolt.Tx) error {
		size, pageSize = tx.Size(), int64(bdb.Info().PageSize)
		return nil
	})
	return int64(st.FreePageN+st.PendingPageN) * pageSize, size
}

// Space is how the store's file is used.
type Space struct {
	File  int64 // the file's size
	Pages int64 // bytes the last commit's pages reach (the rest of the file is preallocated)
	Free  int64 // bytes of free pages within Pages, reused by later writes (Open compacts them away)
}

// Space returns how the store's file is used now.
func (db *DB) Space() Space {
	var s Space
	if fi, err := os.Stat(db.path); err == nil {
		s.File = fi.Size()
	}
	s.Free, s.Pages = freeBytes(db.bolt)
	return s
}
