package statusfiles

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/detector"
)

// fakeHub is a Source whose events a test publishes.
type fakeHub struct {
	mu  sync.Mutex
	fns []func(events.Event)
}

var _ Source = (*fakeHub)(nil)

func (h *fakeHub) Observe(fn func(events.Event)) func() {
	h.mu.Lock()
	h.fns = append(h.fns, fn)
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		h.fns = nil
		h.mu.Unlock()
	}
}

func (h *fakeHub) publish(ev events.Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, fn := range h.fns {
		fn(ev)
	}
}

func (h *fakeHub) runtime(rt nudge.Runtime) { h.publish(events.Event{Type: "runtime", Runtime: rt}) }

func (h *fakeHub) readiness(id string, r nudge.Readiness, summary string, actions ...string) {
	h.publish(events.Event{Type: "readiness", Value: events.Readiness{RuntimeID: id, Readiness: r, Summary: summary, ActionsNeeded: actions}})
}

func rt(id string) nudge.Runtime {
	return nudge.Runtime{RuntimeID: id, WorkspaceID: "ws", Role: id[len("rt_ws."):], Agent: "codex", Managed: true,
		TmuxSession: "agents_ws", TmuxWindow: id[len("rt_ws."):], Target: "agents_ws:" + id[len("rt_ws."):] + ".0",
		PaneID: "%1", Status: nudge.StatusReady, Readiness: nudge.Ready}
}

func open(t testing.TB, dir string, c Config, h *fakeHub) *Writer {
	t.Helper()
	c.StateDir = dir
	w, err := Open(c, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

func TestWritesRuntimeAndFleet(t *testing.T) {
	dir, h := t.TempDir(), &fakeHub{}
	w := open(t, dir, Config{}, h)
	h.runtime(rt("rt_ws.a"))
	h.readiness("rt_ws.a", nudge.NeedsConfirmation, "\x1b[1mAllow?\x1b[0m", "approve: run make")
	w.Snapshot("rt_ws.a", detector.Snapshot{Hash: "abc", ChangedAt: time.Unix(100, 0), PolledAt: time.Unix(200, 0), Stable: 3})
	h.publish(events.Event{Type: "trigger", Trigger: nudge.Trigger{TriggerID: "t1", RuntimeID: "rt_ws.a", State: nudge.StateAcked,
		Result: nudge.ResultDelivered, Prompt: "secret prompt"}})
	w.Close()

	r, err := ReadRuntime(dir, "rt_ws.a")
	if err != nil {
		t.Fatal(err)
	}
	if r.State != "NEEDS_CONFIRMATION" || r.Summary != "Allow?" || len(r.Actions) != 1 || r.Actions[0] != "approve: run make" ||
		r.SnapHash != "abc" || r.ChangeTS != 100 || r.PolledTS != 200 || r.Stable != 3 || r.Status != "ready" ||
		r.Target != "agents_ws:a.0" || r.Agent != "codex" {
		t.Errorf("runtime file: %+v", r)
	}
	if r.LastTrigger == nil || r.LastTrigger.TriggerID != "t1" || r.LastTrigger.Result != "delivered" {
		t.Errorf("last trigger: %+v", r.LastTrigger)
	}
	if len(r.History) != 2 || r.History[0].State != "READY" || r.History[1].State != "NEEDS_CONFIRMATION" {
		t.Errorf("history: %+v", r.History)
	}
	b, _ := os.ReadFile(filepath.Join(Dir(dir), "rt_ws.a", FileName))
	if strings.Contains(string(b), "secret prompt") {
		t.Error("a prompt is in the status file")
	}
	f, err := ReadFleet(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Runtimes) != 1 || f.Runtimes[0].State != "NEEDS_CONFIRMATION" || f.Runtimes[0].History != nil || f.DaemonPID != os.Getpid() {
		t.Errorf("fleet: %+v", f)
	}
	for path, want := range map[string]os.FileMode{Dir(dir): 0o700 | os.ModeDir, filepath.Join(Dir(dir), "rt_ws.a"): 0o700 | os.ModeDir,
		filepath.Join(Dir(dir), FileName): 0o600, filepath.Join(Dir(dir), "rt_ws.a", FileName): 0o600} {
		if fi, err := os.Lstat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode(), err, want)
		}
	}
}

// A busy pane's stream of changes is written once per MinInterval, not once per change.
func TestWritesCoalesced(t *testing.T) {
	dir, h := t.TempDir(), &fakeHub{}
	w := open(t, dir, Config{MinInterval: time.Hour}, h)
	h.runtime(rt("rt_ws.a"))
	for i := range 1000 {
		h.readiness("rt_ws.a", []nudge.Readiness{nudge.Busy, nudge.Ready}[i%2], fmt.Sprintf("line %d", i))
	}
	w.Close()
	// At most: the first write of the runtime's file and the fleet's, then one of each on
	// Close; never one per change.
	if n := w.Writes(); n > 4 || n < 2 {
		t.Errorf("%d writes for 1001 changes, want 2 to 4", n)
	}
	r, err := ReadRuntime(dir, "rt_ws.a")
	if err != nil || r.Summary != "line 999" {
		t.Errorf("last state not written: %+v %v", r.Summary, err)
	}
}

// Each runtime keeps its own bounded history: a busy one does not roll another's out.
func TestHistoryPerRuntime(t *testing.T) {
	dir, h := t.TempDir(), &fakeHub{}
	w := open(t, dir, Config{History: 5}, h)
	h.runtime(rt("rt_ws.quiet"))
	h.readiness("rt_ws.quiet", nudge.Busy, "working")
	h.runtime(rt("rt_ws.busy"))
	for i := range 50 {
		h.readiness("rt_ws.busy", []nudge.Readiness{nudge.Busy, nudge.Ready}[i%2], fmt.Sprintf("turn %d", i))
	}
	w.Close()
	busy, _ := ReadRuntime(dir, "rt_ws.busy")
	quiet, _ := ReadRuntime(dir, "rt_ws.quiet")
	if len(busy.History) != 5 || busy.History[4].Summary != "turn 49" {
		t.Errorf("busy history: %+v", busy.History)
	}
	if len(quiet.History) != 2 || quiet.History[0].State != "READY" || quiet.History[1].Summary != "working" {
		t.Errorf("quiet history: %+v", quiet.History)
	}

	// A new daemon keeps the history the files hold, and removes an orphan's directory.
	w2 := open(t, dir, Config{History: 5, Runtimes: func() []nudge.Runtime { return []nudge.Runtime{rt("rt_ws.quiet")} }}, h)
	w2.Close()
	quiet, _ = ReadRuntime(dir, "rt_ws.quiet")
	if len(quiet.History) != 3 || quiet.History[1].Summary != "working" {
		t.Errorf("history after a restart: %+v", quiet.History)
	}
	if _, err := os.Lstat(filepath.Join(Dir(dir), "rt_ws.busy")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphan's directory left: %v", err)
	}
}

func TestDeregisteredRemoved(t *testing.T) {
	dir, h := t.TempDir(), &fakeHub{}
	w := open(t, dir, Config{MinInterval: time.Millisecond}, h)
	h.runtime(rt("rt_ws.a"))
	h.runtime(rt("rt_ws.b"))
	gone := rt("rt_ws.a")
	gone.Status = nudge.StatusDeregistered
	h.runtime(gone)
	w.Close()
	if _, err := os.Lstat(filepath.Join(Dir(dir), "rt_ws.a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("deregistered runtime's directory left: %v", err)
	}
	if f, _ := ReadFleet(dir); len(f.Runtimes) != 1 || f.Runtimes[0].RuntimeID != "rt_ws.b" {
		t.Errorf("fleet: %+v", f.Runtimes)
	}
}

// An agent that can write into the state directory plants symlinks where the status
// files go: the daemon's writes are not redirected through them.
func TestSymlinksNotFollowed(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(Dir(dir), "rt_ws.a"), 0o700); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{
		filepath.Join(Dir(dir), "rt_ws.a", FileName): victim,  // the file itself
		filepath.Join(Dir(dir), "rt_ws.b"):           outside, // a runtime's directory
		filepath.Join(Dir(dir), FileName):            victim,  // the fleet's file
	} {
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
	}
	h := &fakeHub{}
	w := open(t, dir, Config{}, h)
	h.runtime(rt("rt_ws.a"))
	h.runtime(rt("rt_ws.b"))
	w.Close()
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Errorf("victim written through a symlink: %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("status file written into a symlinked directory: %v", err)
	}
	if r, err := ReadRuntime(dir, "rt_ws.a"); err != nil || r.RuntimeID != "rt_ws.a" {
		t.Errorf("a's file: %+v %v", r, err)
	}
	if fi, err := os.Lstat(filepath.Join(Dir(dir), FileName)); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("fleet file: %v %v", fi, err)
	}

	// A reader does not follow one either.
	if err := os.Remove(filepath.Join(Dir(dir), FileName)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(Dir(dir), FileName)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFleet(dir); !errors.Is(err, ErrNotRegular) {
		t.Errorf("read through a symlink: %v", err)
	}
}

// A status directory that is a symlink (planted by an agent) is refused, not followed.
func TestSymlinkedDirRefused(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, Dir(dir)); err != nil {
		t.Fatal(err)
	}
	if w, err := Open(Config{StateDir: dir}, &fakeHub{}); err == nil {
		w.Close()
		t.Fatal("opened a symlinked status directory")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written through the symlink: %v", entries)
	}
}

// A write that fails (a full disk) leaves the last good file, and the change is written
// once writes work again.
func TestFailedWriteKeepsLastGood(t *testing.T) {
	var failing atomic.Bool
	writeFile = func(fd int, b []byte) error {
		if failing.Load() {
			return fmt.Errorf("write: %w", errNoSpace)
		}
		return writeAt(fd, b)
	}
	t.Cleanup(func() { writeFile = writeAt })
	dir, h := t.TempDir(), &fakeHub{}
	w := open(t, dir, Config{MinInterval: time.Millisecond}, h)
	h.runtime(rt("rt_ws.a"))
	waitFor(t, func() bool { r, err := ReadRuntime(dir, "rt_ws.a"); return err == nil && r.State == "READY" })
	waitFor(t, func() bool { f, err := ReadFleet(dir); return err == nil && len(f.Runtimes) == 1 })
	time.Sleep(10 * time.Millisecond) // nothing is pending

	failing.Store(true)
	before := w.Writes()
	h.readiness("rt_ws.a", nudge.Busy, "working")
	time.Sleep(20 * time.Millisecond) // a few failed attempts
	if r, err := ReadRuntime(dir, "rt_ws.a"); err != nil || r.State != "READY" || w.Writes() != before {
		t.Fatalf("last good file lost: %+v %v", r, err)
	}
	failing.Store(false)
	waitFor(t, func() bool { r, err := ReadRuntime(dir, "rt_ws.a"); return err == nil && r.State == "BUSY" })
}

// A write that fails halfway leaves no temporary file and the old file whole.
func TestWriteAtFailureLeavesOld(t *testing.T) {
	dir := t.TempDir()
	fd, err := openDir(-1, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer syscallClose(fd)
	if err := writeAt(fd, []byte("good")); err != nil {
		t.Fatal(err)
	}
	// A directory in the place of the file: the rename fails after the write.
	if err := os.Remove(filepath.Join(dir, FileName)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, FileName), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeAt(fd, []byte("new")); err == nil {
		t.Fatal("rename over a non-empty directory worked")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary file left: %v", entries)
	}
}

var errNoSpace = errors.New("no space left on device")

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatal("timed out")
}
