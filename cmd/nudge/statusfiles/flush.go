package statusfiles

import (
	"encoding/json"
	"os"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

// The Writer's goroutine: what is due is marshalled under the lock, then written (or
// removed) outside it, one file at a time.

// job is one file to write (dir "" for the fleet's) or a directory to remove.
type job struct {
	dir    string
	body   []byte
	remove bool
}

// run writes what is due, sleeping until the next file is; on Close, everything pending.
func (w *Writer) run() {
	defer close(w.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-w.quit:
			w.mu.Lock()
			w.fleet.dirty = true // written_at: when the daemon stopped
			w.mu.Unlock()
			w.flush(true)
			return
		case <-w.kick:
		case <-timer.C:
		}
		next := w.flush(false)
		timer.Stop()
		if !next.IsZero() {
			timer.Reset(max(time.Millisecond, next.Sub(w.cfg.Now())))
		}
	}
}

// flush writes the files that are due (all pending ones if all) and returns when the
// next pending one is due (zero if none).
func (w *Writer) flush(all bool) time.Time {
	jobs, next := w.due(all)
	var failed []string
	var firstErr error
	for _, j := range jobs {
		if err := w.do(j); err != nil {
			failed = append(failed, j.dir)
			firstErr = cmpErr(firstErr, err)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, dir := range failed { // written again once its interval is over: the last good file stays
		if dir == "" {
			w.fleet.dirty = true
		} else if e := w.rts[dir]; e != nil {
			e.dirty = true
		}
	}
	switch {
	case firstErr != nil && !w.failing:
		w.failing = true
		w.log.Error("status files cannot be written: the last good ones stay; retrying", "dir", Dir(w.cfg.StateDir), "err", firstErr)
	case firstErr == nil && w.failing && len(jobs) > 0:
		w.failing = false
		w.log.Info("status files written again", "dir", Dir(w.cfg.StateDir))
	}
	if retry := w.cfg.Now().Add(w.cfg.MinInterval); len(failed) > 0 && (next.IsZero() || retry.Before(next)) {
		next = retry // a failed file was taken as written now: tried again an interval later
	}
	return next
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// due takes the files due now (every pending one if all), marshalled, and returns when
// the next pending one is due.
func (w *Writer) due(all bool) ([]job, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.cfg.Now()
	var jobs []job
	var next time.Time
	take := func(p *pending) bool {
		if !p.dirty {
			return false
		}
		if at := p.last.Add(w.cfg.MinInterval); !all && now.Before(at) {
			if next.IsZero() || at.Before(next) {
				next = at
			}
			return false
		}
		p.dirty, p.last = false, now
		return true
	}
	for name := range w.gone {
		jobs = append(jobs, job{dir: name, remove: true})
	}
	clear(w.gone)
	for id, e := range w.rts {
		if take(&e.pending) {
			r := e.row
			r.UpdatedAt, r.History = now, e.hist
			b, _ := json.MarshalIndent(r, "", "  ")
			jobs = append(jobs, job{dir: id, body: append(b, '\n')})
		}
	}
	if take(&w.fleet) {
		f := Fleet{Schema: SchemaVersion, WrittenAt: now, DaemonPID: os.Getpid(), Runtimes: make([]Runtime, 0, len(w.rts))}
		for _, e := range w.rts {
			r := e.row
			r.UpdatedAt = now
			f.Runtimes = append(f.Runtimes, r)
		}
		sort.Slice(f.Runtimes, func(i, j int) bool { return f.Runtimes[i].RuntimeID < f.Runtimes[j].RuntimeID })
		b, _ := json.MarshalIndent(f, "", "  ")
		jobs = append(jobs, job{body: append(b, '\n')})
	}
	return jobs, next
}

// do writes or removes one file.
func (w *Writer) do(j job) error {
	if j.remove {
		w.removeDir(j.dir)
		return nil
	}
	fd := w.dirfd
	if j.dir != "" {
		var err error
		if fd, err = openDir(w.dirfd, j.dir, true); err != nil {
			return err
		}
		defer unix.Close(fd)
	}
	if err := writeFile(fd, j.body); err != nil {
		return err
	}
	w.writes.Add(1)
	return nil
}

// removeDir removes a runtime's directory: its status file and any temporary file left,
// then the directory (a symlink in its place is removed, never followed). A directory
// holding anything else is left.
func (w *Writer) removeDir(name string) {
	if fd, err := unix.Openat(w.dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		f := os.NewFile(uintptr(fd), name)
		names, _ := f.Readdirnames(-1)
		for _, n := range names {
			if n == FileName || isTemp(n) {
				_ = unix.Unlinkat(fd, n, 0)
			}
		}
		f.Close()
		_ = unix.Unlinkat(w.dirfd, name, unix.AT_REMOVEDIR)
		return
	}
	var st unix.Stat_t
	if unix.Fstatat(w.dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		_ = unix.Unlinkat(w.dirfd, name, 0)
	}
}
