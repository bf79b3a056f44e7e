package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"runtime/debug"
	"time"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

// ErrDamaged: the database file is not a readable nudge store (truncated, emptied, or
// with pages or records that do not decode). Open never replaces such a file: the
// error says which file and what to do.
var ErrDamaged = errors.New("store is damaged")

func damaged(path string, cause error) error {
	return fmt.Errorf("open store %s: %w: %v. nudge will not replace it: stop nudge, move the file "+
		"aside (keep it and %s for recovery; `bbolt check` inspects it), then start again for an "+
		"empty store or restore a backup", path, ErrDamaged, cause, walPath(path))
}

// openBolt is bolt.Open turned panic-free: bbolt panics on some damaged files (an
// invalid freelist page, a meta page pointing past the end) instead of returning an error.
func openBolt(path string, o *bolt.Options) (bdb *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			closeLeaked(path)
			bdb, err = nil, damaged(path, fmt.Errorf("%v", r))
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if err := precheck(path); err != nil {
		return nil, damaged(path, err)
	}
	bdb, err = bolt.Open(path, 0o600, o)
	var pe *fs.PathError
	if err != nil && !errors.Is(err, bolt.ErrTimeout) && !errors.As(err, &pe) {
		// Not an I/O error: bbolt did not like what it read (bad magic, version,
		// checksum, a file too small to hold its meta pages).
		err = damaged(path, err)
	}
	return bdb, err
}

// recordTypes: the buckets holding one JSON document per key, and what check decodes
// each into.
var recordTypes = map[string]func() any{
	string(bucketRuntimes): func() any { return new(nudge.Runtime) }, string(bucketTriggers): func() any { return new(nudge.Trigger) },
	string(bucketAttempts): func() any { return new(nudge.Attempt) }, string(bucketAudit): func() any { return new(nudge.AuditRecord) },
	string(bucketSchedules): func() any { return new(nudge.Schedule) },
}

// check runs bbolt's consistency check (every page reachable once, none both used and
// free, keys in order) and decodes every record, within timeout. A damaged store is
// refused before anything writes to it. The pre-check has already walked the page tree
// for cycles and wild offsets, so the check ends; a check that needs longer than timeout
// (a very big store) goes on in the background and reports damage (LaterFailed). A
// negative timeout skips the check.
func (db *DB) check(timeout time.Duration) error {
	if timeout < 0 {
		return nil
	}
	if timeout == 0 {
		timeout = DefaultCheckTimeout
	}
	done := make(chan error, 1)
	go func() { done <- db.checkAll() }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			return damaged(db.path, err)
		}
		return nil
	case <-t.C:
		db.bg.Add(1)
		go func() {
			defer db.bg.Done()
			if err := <-done; err != nil {
				db.later.report("store check", damaged(db.path, err))
			}
		}()
		return nil
	}
}

func (db *DB) checkAll() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	// A fault reading the mapped file (a page past a truncated end) is a panic here,
	// not a crash of the daemon.
	debug.SetPanicOnFault(true)
	fi, err := os.Stat(db.path)
	if err != nil {
		return err
	}
	return db.bolt.View(func(tx *bolt.Tx) error {
		if fi.Size() < tx.Size() {
			return fmt.Errorf("the file is %d bytes but its pages reach %d bytes: it was truncated", fi.Size(), tx.Size())
		}
		// Walk every record first, on this goroutine (faults are panics here): bbolt's own
		// check runs on a goroutine of its own, where a wild page pointer would crash.
		if err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return walkBucket(name, b, recordTypes[string(name)])
		}); err != nil {
			return err
		}
		var errs []error
		for e := range tx.Check() {
			if len(errs) < 3 {
				errs = append(errs, e)
			}
		}
		return errors.Join(errs...)
	})
}

// walkBucket reads every key and value under b (nested buckets too), decoding values
// with record when it is set.
func walkBucket(name []byte, b *bolt.Bucket, record func() any) error {
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			if nb := b.Bucket(k); nb != nil {
				return walkBucket(k, nb, nil)
			}
			return nil
		}
		if record != nil && json.Unmarshal(v, record()) != nil {
			return fmt.Errorf("bucket %s: record %x does not decode", name, k)
		}
		return nil
	})
}

// precheck reads bbolt's two meta pages and refuses a file bbolt would panic on or read
// past the end of: no valid meta page, pages reaching past the end of the file, or a
// freelist pointer to something that is not a freelist page.
func precheck(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // bbolt reports it
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	var best *boltMeta
	m0, err0 := readMeta(f, 0)
	if err0 == nil {
		best = &m0
	}
	ps := int64(os.Getpagesize()) // what bbolt assumes when meta page 0 is unreadable
	if best != nil {
		ps = int64(best.pageSize)
	}
	if m1, err1 := readMeta(f, ps); err1 == nil && (best == nil || m1.txid > best.txid) {
		best = &m1
	}
	if best == nil {
		if err0 != nil && fi.Size() < 2*ps {
			return nil // bbolt's own error (file too small) says it
		}
		return errors.New("neither meta page is valid")
	}
	ps = int64(best.pageSize)
	if fi.Size() < int64(best.pgid)*ps {
		return fmt.Errorf("the file is %d bytes but its pages reach %d bytes: it was truncated", fi.Size(), int64(best.pgid)*ps)
	}
	if best.freelist != ^uint64(0) {
		if best.freelist < 2 || best.freelist >= best.pgid {
			return fmt.Errorf("invalid freelist page %d (the file holds %d pages)", best.freelist, best.pgid)
		}
		hdr := make([]byte, 16)
		if _, err := f.ReadAt(hdr, int64(best.freelist)*ps); err != nil {
			return fmt.Errorf("read freelist page: %w", err)
		}
		if flags := binary.LittleEndian.Uint16(hdr[8:]); flags&0x10 == 0 {
			return fmt.Errorf("invalid freelist page %d (page type %#x)", best.freelist, flags)
		}
	}
	if best.root < 2 || best.root >= best.pgid {
		return fmt.Errorf("invalid root page %d (the file holds %d pages)", best.root, best.pgid)
	}
	pw := pageWalk{f: f, m: *best, seen: map[uint64]bool{}}
	if best.freelist != ^uint64(0) {
		if err := pw.freelist(best.freelist); err != nil {
			return err
		}
	}
	return pw.walk(best.root, 0)
}

// pageWalk reads the page tree from the file (not the mapping) and checks that every
// element's key and value lie inside its page, every child page inside the file, and no
// page is reached twice: bbolt follows these offsets as raw pointers, and a wild one is
// a fault no recover catches (its own check runs on a goroutine of its own).
type pageWalk struct {
	f    *os.File
	m    boltMeta
	seen map[uint64]bool
}

const (
	pageHeader   = 16 // id u64, flags u16, count u16, overflow u32
	elemSize     = 16 // branch: pos u32, ksize u32, pgid u64; leaf: flags u32, pos u32, ksize u32, vsize u32
	branchFlag   = 0x01
	leafFlag     = 0x02
	freelistFlag = 0x10
	bucketLeaf   = 0x01
	maxDepth     = 64
)

func (pw *pageWalk) read(id uint64) ([]byte, error) {
	ps := int64(pw.m.pageSize)
	if id < 2 || id >= pw.m.pgid {
		return nil, fmt.Errorf("page %d is outside the file's %d pages", id, pw.m.pgid)
	}
	hdr := make([]byte, pageHeader)
	if _, err := pw.f.ReadAt(hdr, int64(id)*ps); err != nil {
		return nil, fmt.Errorf("read page %d: %w", id, err)
	}
	overflow := uint64(binary.LittleEndian.Uint32(hdr[12:]))
	if id+overflow >= pw.m.pgid {
		return nil, fmt.Errorf("page %d overflows past the file's %d pages", id, pw.m.pgid)
	}
	buf := make([]byte, int64(overflow+1)*ps)
	if _, err := pw.f.ReadAt(buf, int64(id)*ps); err != nil {
		return nil, fmt.Errorf("read page %d: %w", id, err)
	}
	return buf, nil
}

func (pw *pageWalk) freelist(id uint64) error {
	buf, err := pw.read(id)
	if err != nil {
		return err
	}
	n, start := int(binary.LittleEndian.Uint16(buf[10:])), pageHeader
	if n == 0xFFFF { // the count is the first element
		if len(buf) < pageHeader+8 {
			return fmt.Errorf("freelist page %d is cut short", id)
		}
		c := binary.LittleEndian.Uint64(buf[pageHeader:])
		if c > uint64(len(buf)) {
			return fmt.Errorf("freelist page %d claims %d ids", id, c)
		}
		n, start = int(c), pageHeader+8
	}
	if start+n*8 > len(buf) {
		return fmt.Errorf("freelist page %d claims %d ids, more than it holds", id, n)
	}
	for i := range n {
		if p := binary.LittleEndian.Uint64(buf[start+i*8:]); p < 2 || p >= pw.m.pgid {
			return fmt.Errorf("freelist page %d lists page %d, outside the file's %d pages", id, p, pw.m.pgid)
		}
	}
	return nil
}

func (pw *pageWalk) walk(id uint64, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("page %d: the tree is deeper than %d", id, maxDepth)
	}
	if pw.seen[id] {
		return fmt.Errorf("page %d is reached twice", id)
	}
	pw.seen[id] = true
	buf, err := pw.read(id)
	if err != nil {
		return err
	}
	flags, count := binary.LittleEndian.Uint16(buf[8:]), int(binary.LittleEndian.Uint16(buf[10:]))
	switch {
	case flags&branchFlag != 0:
		if pageHeader+count*elemSize > len(buf) {
			return fmt.Errorf("branch page %d claims %d elements, more than it holds", id, count)
		}
		for i := range count {
			at := pageHeader + i*elemSize
			e := buf[at:]
			pos, ksize := int(binary.LittleEndian.Uint32(e)), int(binary.LittleEndian.Uint32(e[4:]))
			if at+pos+ksize > len(buf) || pos < 0 || ksize < 0 {
				return fmt.Errorf("branch page %d: element %d points outside the page", id, i)
			}
			if err := pw.walk(binary.LittleEndian.Uint64(e[8:]), depth+1); err != nil {
				return err
			}
		}
		return nil
	case flags&leafFlag != 0:
		return pw.leaf(buf, id, count, depth)
	}
	return fmt.Errorf("page %d is neither a branch nor a leaf (flags %#x)", id, flags)
}

// leaf checks a leaf page's elements (buf starts at the page header; an inline bucket's
// page is a slice of its parent's value) and walks the buckets they hold.
func (pw *pageWalk) leaf(buf []byte, id uint64, count, depth int) error {
	if pageHeader+count*elemSize > len(buf) {
		return fmt.Errorf("leaf page %d claims %d elements, more than it holds", id, count)
	}
	for i := range count {
		at := pageHeader + i*elemSize
		e := buf[at:]
		fl := binary.LittleEndian.Uint32(e)
		pos, ksize, vsize := int(binary.LittleEndian.Uint32(e[4:])), int(binary.LittleEndian.Uint32(e[8:])), int(binary.LittleEndian.Uint32(e[12:]))
		end := at + pos + ksize + vsize
		if pos < 0 || ksize < 0 || vsize < 0 || end > len(buf) || end < at {
			return fmt.Errorf("leaf page %d: element %d points outside the page", id, i)
		}
		if fl&bucketLeaf == 0 {
			continue
		}
		v := buf[at+pos+ksize : end]
		if len(v) < 16 {
			return fmt.Errorf("leaf page %d: element %d is a bucket without a header", id, i)
		}
		if root := binary.LittleEndian.Uint64(v); root != 0 {
			if err := pw.walk(root, depth+1); err != nil {
				return err
			}
			continue
		}
		inline := v[16:] // an inline bucket: its one leaf page follows the header
		if len(inline) < pageHeader || binary.LittleEndian.Uint16(inline[8:])&leafFlag == 0 {
			return fmt.Errorf("leaf page %d: element %d is an inline bucket without a leaf page", id, i)
		}
		if depth+1 > maxDepth {
			return fmt.Errorf("page %d: the tree is deeper than %d", id, maxDepth)
		}
		if err := pw.leaf(inline, id, int(binary.LittleEndian.Uint16(inline[10:])), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// boltMeta is the part of bbolt's meta page precheck reads (bbolt's on-disk format:
// a 16-byte page header, then magic, version, page size, flags, root bucket (page,
// sequence), freelist, high-water page, txid, FNV-64a checksum of what precedes it).
type boltMeta struct {
	pageSize                   uint32
	root, freelist, pgid, txid uint64
}

func readMeta(f *os.File, off int64) (boltMeta, error) {
	b := make([]byte, 16+64)
	if _, err := f.ReadAt(b, off); err != nil {
		return boltMeta{}, err
	}
	m := b[16:]
	le := binary.LittleEndian
	h := fnv.New64a()
	h.Write(m[:56])
	switch {
	case le.Uint32(m[0:]) != 0xED0CDAED:
		return boltMeta{}, errors.New("bad magic")
	case le.Uint64(m[56:]) != h.Sum64():
		return boltMeta{}, errors.New("bad checksum")
	}
	meta := boltMeta{pageSize: le.Uint32(m[8:]), root: le.Uint64(m[16:]), freelist: le.Uint64(m[32:]),
		pgid: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}
	if meta.pageSize < 512 || meta.pageSize > 1<<20 {
		return boltMeta{}, errors.New("bad page size")
	}
	return meta, nil
}
