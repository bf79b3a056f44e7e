package record

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Dirser is a Format that says in which directories the record of s will appear. The
// follower watches the nearest existing ancestor of each (within Root) while the file
// does not exist yet, so that its creation wakes it; a Format without it is watched at
// its Root.
type Dirser interface {
	Dirs(s Spec) []string
}

// Options tune a follower; the zero value is the default.
type Options struct {
	// Buffer is the capacity of the Events channel (default 256). The follower waits
	// while it is full: the record stays on disk, nothing is lost.
	Buffer int
	// Rescan bounds the wait between two looks for a record not found yet, in case a
	// file event was missed (default 5s; the looks start at 250ms and double). Once the
	// file is found it is followed by file events alone.
	Rescan time.Duration
}

// follower is the Reader Open returns.
type follower struct {
	f    Format
	spec Spec
	opt  Options
	ev   chan Event
	stop chan struct{}
	done chan struct{}
	once sync.Once

	path    atomic.Pointer[string]
	err     error // set before done is closed
	skipped atomic.Int64

	// Sync requests: the highest number asked for, the highest answered (the run
	// goroutine's), and a wake-up for the loop.
	syncReq  atomic.Uint64
	syncDone uint64
	poke     chan struct{}
}

// Open starts following the record of s in format f and returns its Reader at once:
// the record is looked for, then read from its start and followed as it grows, each
// complete line parsed into Events. The Reader ends (Events closed) on Close, when the
// record turns out to be in a format f does not know (Err: ErrUnknownFormat) or lies
// outside f's directory (ErrOutside), or when the file system cannot be watched.
func Open(f Format, s Spec, opt Options) Reader {
	if opt.Buffer <= 0 {
		opt.Buffer = 256
	}
	if opt.Rescan <= 0 {
		opt.Rescan = 5 * time.Second
	}
	r := &follower{f: f, spec: s, opt: opt, ev: make(chan Event, opt.Buffer),
		stop: make(chan struct{}), done: make(chan struct{}), poke: make(chan struct{}, 1)}
	go r.run()
	return r
}

func (r *follower) Events() <-chan Event { return r.ev }

func (r *follower) Path() string {
	if p := r.path.Load(); p != nil {
		return *p
	}
	return ""
}

// Err says why the reader ended; nil while it runs and after Close.
func (r *follower) Err() error {
	select {
	case <-r.done:
		return r.err
	default:
		return nil
	}
}

// Skipped counts the lines longer than MaxLine that were skipped.
func (r *follower) Skipped() int64 { return r.skipped.Load() }

// Sync implements Syncer.
func (r *follower) Sync(n uint64) {
	for {
		cur := r.syncReq.Load()
		if n <= cur || r.syncReq.CompareAndSwap(cur, n) {
			break
		}
	}
	select {
	case r.poke <- struct{}{}:
	default: // a wake-up is pending already: its read answers this request too
	}
}

// answerSync answers the Sync requests up to req, the last one made before the read that
// just ended began: an Event Synced after that read's events. A request made during the
// read has its wake-up pending: the next read answers it.
func (r *follower) answerSync(req uint64) error {
	if req <= r.syncDone {
		return nil
	}
	r.syncDone = req
	return r.sendAs([]Event{{Kind: Synced, Seq: req}}, 0, r.Path())
}

func (r *follower) Close() error {
	r.once.Do(func() { close(r.stop) })
	<-r.done
	return nil
}

func (r *follower) run() {
	// Events closes last: a reader that sees it closed finds Err set (done closed).
	defer close(r.ev)
	defer close(r.done)
	w, err := watcher()
	if err != nil {
		r.err = err
		return
	}
	defer w.close()
	path, err := r.locate(w)
	if err == nil {
		err = r.follow(w, path)
	}
	if !r.stopped() {
		r.err = err
	}
}

func (r *follower) stopped() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

var errStopped = errors.New("record: reader closed")

// locate waits until the record exists and returns its path, checked to lie under the
// format's Root.
func (r *follower) locate(w *sub) (string, error) {
	root := r.f.Root(r.spec)
	watched := map[string]bool{}
	wait := 250 * time.Millisecond
	for {
		req := r.syncReq.Load()
		if p, err := r.f.Locate(r.spec); err == nil {
			if file, key, ok := splitKey(p); ok && r.isTable() {
				file, err := inside(root, file)
				return file + "#" + key, err
			}
			return inside(root, p)
		} else if !errors.Is(err, ErrNotYet) {
			return "", err
		}
		if err := r.answerSync(req); err != nil { // not found: nothing to read
			return "", err
		}
		dirs := []string{root}
		if d, ok := r.f.(Dirser); ok {
			dirs = d.Dirs(r.spec)
		}
		added := false
		for _, d := range dirs {
			if a := existingAncestor(root, d); a != "" && !watched[a] {
				if w.add(a) == nil {
					watched[a], added = true, true
				}
			}
		}
		if added {
			continue // a file made before the watch began is found by looking again now
		}
		t := time.NewTimer(wait)
		select {
		case <-r.stop:
			t.Stop()
			return "", errStopped
		case <-w.ev:
			wait = 250 * time.Millisecond // things move: look soon again if this was not it
		case <-w.missed:
		case <-r.poke:
		case <-t.C:
			wait = min(2*wait, r.opt.Rescan)
		}
		t.Stop()
	}
}

// existingAncestor returns dir or its nearest existing ancestor, if that lies within
// root (root itself included); "" otherwise.
func existingAncestor(root, dir string) string {
	root = filepath.Clean(root)
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if !within(root, d) {
			return ""
		}
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
		if d == root {
			return ""
		}
	}
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// inside resolves p's symlinks and returns it if it is a regular file under root (also
// resolved), ErrOutside otherwise.
func inside(root, p string) (string, error) {
	rr, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", ErrOutside
	}
	rp, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", ErrNotYet
	}
	if !within(rr, rp) {
		return "", ErrOutside
	}
	return rp, nil
}

// follow reads path from its start and then as file events say it grew. A file that
// shrank (truncated) is read again from its start; one replaced under the same name by
// another file ends the reader (ErrReplaced, see filePin).
func (r *follower) follow(w *sub, path string) error {
	if t, ok := r.f.(Table); ok {
		return r.followTable(w, path, t)
	}
	r.path.Store(&path)
	if err := w.add(filepath.Dir(path)); err != nil {
		return err
	}
	dir, err := pinDir(r.f.Root(r.spec), path)
	if err != nil {
		return err
	}
	defer dir.close()
	fl := &lineFeed{r: r, st: &State{}}
	var pin filePin
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	for {
		req := r.syncReq.Load()
		if f == nil {
			var err error
			if f, err = dir.open(); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err // replaced by a symlink, a FIFO, a device: not read
			}
			first := pin.fi == nil
			if err := pin.check(f); err != nil {
				return err
			}
			if first {
				fl.reset()
			} else if f != nil && fl.off > 0 {
				// The pinned file opened again after an event on its name (renamed away
				// and back, linked again): read on from where the reader was, not from its
				// start (its old turns again); a file that shrank is read anew below.
				if fi, err := f.Stat(); err == nil && fi.Size() >= fl.off {
					if _, err := f.Seek(fl.off, io.SeekStart); err != nil {
						return err
					}
				}
			}
		}
		if f != nil {
			if fi, err := f.Stat(); err == nil && fi.Size() < fl.off {
				// Truncated in place: the CLI started the file anew.
				fl.reset()
				if _, err := f.Seek(0, io.SeekStart); err != nil {
					return err
				}
			}
			if err := fl.readFrom(f); err != nil {
				return err
			}
		}
		if err := r.answerSync(req); err != nil {
			return err
		}
		select {
		case <-r.stop:
			return errStopped
		case <-r.poke: // read now
		case e := <-w.ev:
			if filepath.Clean(e.Name) != path {
				continue
			}
			if e.Has(fsnotify.Remove) || e.Has(fsnotify.Rename) || e.Has(fsnotify.Create) {
				// Removed, renamed or created under the name: open it again; a file
				// that is not the one pinned ends the reader (filePin).
				if f != nil {
					f.Close()
					f = nil
				}
			}
		case <-w.missed:
			// Events were lost (a full buffer, the watcher's overflow): the read above
			// catches up with the file, checked for truncation first, and a file replaced
			// meanwhile is opened anew.
			if f != nil && !dir.same(f) {
				f.Close()
				f = nil
			}
		}
	}
}

// lineFeed cuts a file's bytes into lines and feeds whole ones to the Format.
type lineFeed struct {
	r    *follower
	st   *State
	off  int64 // bytes of the file consumed
	buf  []byte
	skip bool // inside a line longer than MaxLine: drop until its newline
	dst  []Event
	rd   [64 << 10]byte
}

func (fl *lineFeed) reset() {
	fl.st = &State{}
	fl.off, fl.buf, fl.skip = 0, fl.buf[:0], false
}

// readFrom reads f to its current end, parsing every complete line; it stops when the
// reader is closed, however fast the file grows.
func (fl *lineFeed) readFrom(f *os.File) error {
	for {
		if fl.r.stopped() {
			return errStopped
		}
		n, err := f.Read(fl.rd[:])
		if n > 0 {
			fl.off += int64(n)
			if perr := fl.feed(fl.rd[:n]); perr != nil {
				return perr
			}
		}
		if err == io.EOF || n == 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (fl *lineFeed) feed(b []byte) error {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		switch {
		case fl.skip:
		case len(fl.buf)+len(part) > MaxLine:
			fl.skip, fl.buf = true, fl.buf[:0]
			fl.r.skipped.Add(1)
		default:
			fl.buf = append(fl.buf, part...)
		}
		if i < 0 {
			return nil
		}
		b = b[i+1:]
		fl.st.Line++
		if fl.skip {
			fl.skip = false
			continue
		}
		if err := fl.line(fl.buf); err != nil {
			return err
		}
		fl.buf = fl.buf[:0]
		if cap(fl.buf) > len(fl.rd) {
			fl.buf = nil // a long line's buffer is not kept for the life of the reader
		}
	}
	return nil
}

// line parses one complete line and sends its events.
func (fl *lineFeed) line(l []byte) error {
	l = bytes.TrimSuffix(l, []byte{'\r'})
	if len(bytes.TrimSpace(l)) == 0 {
		return nil
	}
	var err error
	fl.dst, err = fl.r.f.Parse(fl.dst[:0], fl.st, l)
	if err != nil {
		return err
	}
	return fl.r.send(fl.dst, fl.st.Line)
}

// send gives the events of record line n to the Reader's channel, waiting while it is
// full.
func (r *follower) send(evs []Event, n int64) error { return r.sendAs(evs, n, r.Path()) }

// sendAs is send with the events' File path (a database record's FILE#KEY of the row).
func (r *follower) sendAs(evs []Event, n int64, path string) error {
	for _, e := range evs {
		e.File = path
		if e.Line == 0 {
			e.Line = n
		}
		select {
		case r.ev <- e:
		case <-r.stop:
			return errStopped
		}
	}
	return nil
}

func (r *follower) isTable() bool {
	_, ok := r.f.(Table)
	return ok
}

// followTable reads a database record's rows from its first and then whenever the
// database's files change (its write-ahead log, or the file itself at a checkpoint).
func (r *follower) followTable(w *sub, path string, t Table) error {
	r.path.Store(&path)
	file, key, _ := splitKey(path)
	if err := w.add(filepath.Dir(file)); err != nil {
		return err
	}
	tr, err := t.OpenTable(r.spec, file, key)
	if err != nil {
		return err
	}
	defer tr.Close()
	st := &State{}
	var last int64
	var dst []Event
	changed := false
	for {
		req := r.syncReq.Load()
		// SQLite opens the files by name again (a connection idle for a while): they are
		// checked before every read.
		if err := checkDatabase(file); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		err := tr.Rows(last, func(n int64, key string, text []byte) error {
			last, st.Line = n, n
			if text == nil || len(text) > MaxLine {
				r.skipped.Add(1)
				return nil
			}
			var err error
			if dst, err = r.f.Parse(dst[:0], st, text); err != nil {
				return err
			}
			return r.sendAs(dst, n, file+"#"+key)
		})
		if errors.Is(err, ErrUnknownFormat) || errors.Is(err, errStopped) {
			return err
		}
		if err == nil {
			if err := r.answerSync(req); err != nil {
				return err
			}
		}
		// A read after a change looks once more shortly after: a commit's log write
		// (the file event) comes a moment before its index is updated, and a read in
		// between does not see it yet. Any other error (the database locked past its
		// busy wait) is looked at again soon, change or not.
		var again time.Duration
		switch {
		case err != nil:
			again = 250 * time.Millisecond
		case changed:
			again = 50 * time.Millisecond
		}
		if changed, err = r.waitChange(w, file, again); err != nil {
			return err
		}
	}
}

// waitChange waits until a file event names the database file or one of its companions
// (FILE-wal, FILE-journal), events were lost, or timeout (if > 0) passed, and says
// whether something changed; events that came meanwhile are taken with it, so that a
// burst of writes costs one read.
func (r *follower) waitChange(w *sub, file string, timeout time.Duration) (bool, error) {
	var after <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		after = t.C
	}
	for {
		select {
		case <-r.stop:
			return false, errStopped
		case <-after:
			return false, nil
		case <-w.missed:
			return true, nil
		case <-r.poke: // a Sync: read now
			return true, nil
		case e := <-w.ev:
			if !strings.HasPrefix(filepath.Clean(e.Name), file) {
				continue
			}
			for {
				select {
				case <-w.ev:
				default:
					return true, nil
				}
			}
		}
	}
}

// filePin is the identity (device and inode) of the first file a follower opened at its
// path. The record is the file the CLI created: another file put in its place (an agent
// that rewrote its record and renamed it over the original, to name another session)
// is not read.
type filePin struct{ fi os.FileInfo }

// check pins f's identity on first use and fails with ErrReplaced when a later f is
// another file (the caller closes f). A nil f (the file gone for now) passes.
func (p *filePin) check(f *os.File) error {
	if f == nil {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if p.fi == nil {
		p.fi = fi
		return nil
	}
	if !os.SameFile(p.fi, fi) {
		return ErrReplaced
	}
	return nil
}
