// Package statusfiles is the daemon's status store for other tools (seed 002 "Status
// Store + Display"): one status file per runtime, <state-dir>/workers/<runtime
// id>/status.json, and one for the fleet, <state-dir>/workers/status.json, kept current
// while the daemon runs and readable whether it runs or not (`nudge status` and the tmux
// status line read them when the socket does not answer).
//
// The main types:
//
//	Writer   the room: Open starts it on the event hub, Snapshot tells it of a capture,
//	         Close flushes and stops it
//	Config   the state directory, the write interval, the history kept; DefaultConfig
//	Runtime  one runtime's file: seed 002's status row and its readiness history
//	Fleet    the fleet's file: every runtime's row
//	ReadFleet, ReadRuntime  read them back (bounded, regular files, no symlink followed)
//
// Writes are coalesced per file: a change is written at once if the file was not written
// in the last MinInterval, else once that interval is over, so a pane that prints a line
// a millisecond costs at most one write a MinInterval (BenchmarkBusyPane measures it).
// Each write is a temporary file in the same directory (O_EXCL|O_NOFOLLOW, 0600) that is
// synced and renamed over the old one: a reader sees the old file or the new one, and a
// write that fails (a full disk) leaves the last good file. The directories are 0700 and
// opened without following a symlink, so an agent that can write into the state
// directory cannot redirect the daemon's writes to a file of its choosing.
package statusfiles

import (
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/detector"
)

// Config configures a Writer. Zero fields take DefaultConfig's values.
type Config struct {
	// StateDir is the daemon's state directory (it must exist); the files go under its
	// DirName. Required.
	StateDir string
	// MinInterval is the least time between two writes of one file. 0 means 1s.
	MinInterval time.Duration
	// History is how many readiness and status changes each runtime's file keeps (its own:
	// a busy runtime never rolls another's out). 0 means 200.
	History int
	// Runtimes lists the runtimes when the Writer opens: their files are written (keeping
	// the history a file already holds) and any other runtime's directory is removed.
	// nil means none.
	Runtimes func() []nudge.Runtime
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Bus: the Writer reads the monitor's captures on it (detector.Captured: Snapshot);
	// nil: it is told by hand.
	Bus *nudge.Bus
	// Logger is told when writes fail and when they work again; nil means none.
	Logger hclog.Logger
}

// DefaultConfig returns the defaults: a write a second per file at most, 200 history
// entries per runtime.
func DefaultConfig() Config { return Config{MinInterval: time.Second, History: 200} }

// Source is the event hub (*events.Hub): the Writer reads the runtime, readiness and
// trigger events inside Publish.
type Source interface {
	Observe(fn func(events.Event)) (stop func())
}

var _ Source = (*events.Hub)(nil)

// Writer keeps the status files current. The daemon opens it after the hub and closes it
// before; Close writes what is pending.
type Writer struct {
	cfg   Config
	sub   *nudge.Client // the monitor's captures
	dirfd int           // the status directory
	log   hclog.Logger

	mu        sync.Mutex
	rts       map[string]*entry
	gone      map[string]bool // directories to remove
	fleet     pending
	failing   bool
	kick      chan struct{}
	writes    atomic.Uint64
	changes   atomic.Uint64
	stop      func()
	done      chan struct{}
	quit      chan struct{}
	closeOnce sync.Once
}

// pending is one file's write schedule.
type pending struct {
	dirty bool
	last  time.Time // written last (or failed last)
}

// entry is one runtime as its file shows it.
type entry struct {
	row  Runtime // History unset: hist is its history
	hist []Entry
	pending
}

// Open creates the status directory (0700) and starts the Writer on src.
func Open(cfg Config, src Source) (*Writer, error) {
	d := DefaultConfig()
	if cfg.MinInterval <= 0 {
		cfg.MinInterval = d.MinInterval
	}
	if cfg.History <= 0 {
		cfg.History = d.History
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.StateDir == "" {
		return nil, errors.New("statusfiles: Config.StateDir is required")
	}
	fd, err := openDir(-1, Dir(cfg.StateDir), true)
	if err != nil {
		return nil, err
	}
	w := &Writer{cfg: cfg, dirfd: fd, log: cfg.Logger, rts: map[string]*entry{}, gone: map[string]bool{},
		kick: make(chan struct{}, 1), done: make(chan struct{}), quit: make(chan struct{})}
	w.stop = src.Observe(w.observe) // first: a change after the list below is not missed
	w.sub = nudge.NewClient(cfg.Bus, "statusfiles", 256)
	// A runtime's latest capture is what its file shows: an older one still queued is replaced.
	nudge.SubscribeLatest(w.sub, func(c detector.Captured) string { return c.RuntimeID },
		func(c detector.Captured) { w.Snapshot(c.RuntimeID, c.Snapshot) })
	w.load()
	go w.run()
	return w, nil
}

// Close stops reading events, writes every pending file and the fleet's (its written_at
// is then when the daemon stopped) and waits. Idempotent.
func (w *Writer) Close() {
	w.closeOnce.Do(func() {
		if w.stop != nil {
			w.stop()
		}
		w.sub.Close()
		close(w.quit)
		<-w.done
		unix.Close(w.dirfd)
	})
}

// Writes is how many files were written (for tests and the benchmarks).
func (w *Writer) Writes() uint64 { return w.writes.Load() }

// Changes is how many changes the Writer took (each would have been a write of a runtime's
// file and the fleet's without coalescing).
func (w *Writer) Changes() uint64 { return w.changes.Load() }

// load takes the runtimes of Config.Runtimes, with the history their files hold, and
// removes the directories of the others (seed 002: orphaned status files are cleared on
// startup).
func (w *Writer) load() {
	var rts []nudge.Runtime
	if w.cfg.Runtimes != nil {
		rts = w.cfg.Runtimes()
	}
	now := w.cfg.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, rt := range rts {
		if !validName(rt.RuntimeID) || rt.Status == nudge.StatusDeregistered {
			continue
		}
		e := w.rts[rt.RuntimeID]
		if e != nil {
			continue // an event since Open began is newer
		}
		e = &entry{}
		if old, err := ReadRuntime(w.cfg.StateDir, rt.RuntimeID); err == nil && old.RuntimeID == rt.RuntimeID {
			e.hist = keptHistory(old.History, w.cfg.History) // the file is anyone's of this uid: only its history is taken
		}
		e.setRuntime(rt, now, w.cfg.History)
		e.dirty = true
		w.rts[rt.RuntimeID] = e
	}
	w.fleet.dirty = true
	for _, name := range w.listDirs() {
		if _, ok := w.rts[name]; !ok {
			w.gone[name] = true
		}
	}
	w.signal()
}

// maxSummary bounds a summary a history entry read back from a file keeps.
const maxSummary = 512

// keptHistory is the newest keep entries of h, as read back from a file: each summary cut
// to maxSummary bytes and stripped of escapes, statuses and states to 32 bytes.
func keptHistory(h []Entry, keep int) []Entry {
	h = h[max(0, len(h)-keep):]
	out := make([]Entry, 0, len(h))
	for _, e := range h {
		e.Summary = nudge.StripANSI(e.Summary[:min(len(e.Summary), maxSummary)])
		e.Status, e.State = e.Status[:min(len(e.Status), 32)], e.State[:min(len(e.State), 32)]
		out = append(out, e)
	}
	return out
}

// listDirs lists the names in the status directory that may be a runtime's, and removes
// temporary files left there.
func (w *Writer) listDirs() []string {
	fd, err := unix.Openat(w.dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), DirName)
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	out := names[:0]
	for _, n := range names {
		switch {
		case validName(n) && n != FileName:
			out = append(out, n)
		case isTemp(n): // the fleet's, left by a daemon that stopped mid-write
			_ = unix.Unlinkat(w.dirfd, n, 0)
		}
	}
	return out
}

// isTemp reports whether name is a temporary status file (writeAt's).
func isTemp(name string) bool {
	return strings.HasPrefix(name, ".status.") && strings.HasSuffix(name, ".tmp")
}

func (w *Writer) signal() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Snapshot records a capture the detector took of a runtime's pane
// (detector.Captured, on the bus). It never blocks.
func (w *Writer) Snapshot(runtimeID string, s detector.Snapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.rts[runtimeID]
	if e == nil {
		return
	}
	r := &e.row
	r.SnapHash, r.PolledTS, r.Stable = s.Hash, unixOrZero(s.PolledAt), s.Stable
	r.ChangeTS = max(r.ChangeTS, unixOrZero(s.ChangedAt))
	w.markLocked(e)
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// observe takes one event from the hub (inside Publish: a few map updates, no I/O).
func (w *Writer) observe(ev events.Event) {
	switch ev.Type {
	case "runtime":
		if rt, ok := ev.Runtime.(nudge.Runtime); ok {
			w.runtime(rt, ev.Time)
		}
	case "readiness":
		if r, ok := ev.Value.(events.Readiness); ok {
			w.readiness(r, ev.Time)
		}
	case "trigger":
		if t, ok := ev.Trigger.(nudge.Trigger); ok {
			w.trigger(t)
		}
	}
}

func (w *Writer) runtime(rt nudge.Runtime, at time.Time) {
	if !validName(rt.RuntimeID) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if rt.Status == nudge.StatusDeregistered {
		if _, ok := w.rts[rt.RuntimeID]; ok {
			delete(w.rts, rt.RuntimeID)
			w.gone[rt.RuntimeID] = true
			w.fleet.dirty = true
			w.signal()
		}
		return
	}
	e := w.rts[rt.RuntimeID]
	if e == nil {
		e = &entry{}
		w.rts[rt.RuntimeID] = e
		delete(w.gone, rt.RuntimeID)
	}
	e.setRuntime(rt, at, w.cfg.History)
	w.markLocked(e)
}

func (w *Writer) readiness(r events.Readiness, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.rts[r.RuntimeID]
	if e == nil {
		return
	}
	row := &e.row
	row.State, row.Summary, row.Busy = string(r.Readiness), nudge.StripANSI(r.Summary), r.OperatorBusy
	row.Actions = append([]string{}, r.ActionsNeeded...)
	if r.Readiness == nudge.Busy { // output: the screen changes, and no capture has seen it settle
		row.ChangeTS, row.Stable = max(row.ChangeTS, at.Unix()), 0
	}
	e.note(at, w.cfg.History)
	w.markLocked(e)
}

func (w *Writer) trigger(t nudge.Trigger) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.rts[t.RuntimeID]
	if e == nil {
		return
	}
	e.row.LastTrigger = &Trigger{TriggerID: t.TriggerID, State: string(t.State), Result: string(t.Result),
		ErrorCode: string(t.ErrorCode), UpdatedAt: unixOrZero(t.UpdatedAt)}
	w.markLocked(e)
}

func (w *Writer) markLocked(e *entry) {
	w.changes.Add(1)
	e.dirty, w.fleet.dirty = true, true
	w.signal()
}

// setRuntime takes rt's record into the row, noting a change of status or readiness in
// the history.
func (e *entry) setRuntime(rt nudge.Runtime, at time.Time, keep int) {
	r := &e.row
	r.Schema, r.RuntimeID, r.WorkspaceID, r.Role, r.AgentID, r.Agent, r.Managed = SchemaVersion, rt.RuntimeID, rt.WorkspaceID, rt.Role, rt.AgentID, rt.Agent, rt.Managed
	r.TmuxSession, r.TmuxWindow, r.Target, r.PaneID, r.Dir = rt.TmuxSession, rt.TmuxWindow, rt.Target, rt.PaneID, rt.Dir
	r.Status, r.Paused, r.Busy, r.StatusSince = string(rt.Status), rt.Paused, rt.OperatorBusy, rt.StatusSince
	if rt.Readiness != "" {
		r.State, r.Summary = string(rt.Readiness), nudge.StripANSI(rt.Summary)
	}
	if r.Actions == nil {
		r.Actions = []string{}
	}
	if at.IsZero() {
		at = time.Now()
	}
	e.note(at, keep)
}

// note appends the row's status and readiness to the history when they differ from its
// newest entry, keeping the newest keep.
func (e *entry) note(at time.Time, keep int) {
	r := &e.row
	n := Entry{TS: at.Unix(), Status: r.Status, State: r.State, Summary: r.Summary}
	if l := len(e.hist); l > 0 && e.hist[l-1].Status == n.Status && e.hist[l-1].State == n.State && e.hist[l-1].Summary == n.Summary {
		return
	}
	if len(e.hist) >= keep {
		e.hist = slices.Delete(e.hist, 0, len(e.hist)-keep+1)
	}
	e.hist = append(e.hist, n)
}
