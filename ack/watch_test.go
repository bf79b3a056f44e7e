package ack

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/panes"
)

type runtimes struct {
	mu sync.Mutex
	rt nudge.Runtime
}

func (r *runtimes) Get(string) (nudge.Runtime, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rt, true
}

func (r *runtimes) List() []nudge.Runtime {
	r.mu.Lock()
	defer r.mu.Unlock()
	return []nudge.Runtime{r.rt}
}

func (r *runtimes) Update(_ string, fn func(*nudge.Runtime)) (nudge.Runtime, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(&r.rt)
	return r.rt, nil
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatal("never: " + what)
}

// TestTrackerRecord: a Claude Code runtime's transcript, written after its start, acks the
// prompts in it, gives its session id and the turn's reply; a runtime that stops has its
// reader stopped; a transcript in an unknown format is listed as degraded.
func TestTrackerRecord(t *testing.T) {
	profiles, err := panes.LoadProfiles("")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	now := time.Now()
	rt := nudge.Runtime{RuntimeID: "w.dev", Agent: "claude", Dir: "/src/app", Status: nudge.StatusStarting, StatusSince: now, CreatedAt: now}
	rts := &runtimes{rt: rt}
	var mu sync.Mutex
	replies := map[string]nudge.ReplyRead{}
	bus := nudge.NewBus()
	defer bus.Close()
	c := nudge.NewClient(bus, "test", 4)
	defer c.Close()
	nudge.Subscribe(c, func(r nudge.ReplyRead) { mu.Lock(); replies[r.TriggerID] = r; mu.Unlock() })
	k := NewTracker(TrackerConfig{Bus: bus, Profiles: profiles, Runtimes: rts,
		Getenv: func(k string) string {
			if k == "HOME" {
				return home
			}
			return ""
		}})
	k.Open()
	defer k.Close()
	k.Expect(nudge.Trigger{TriggerID: "t1", RuntimeID: "w.dev", InjectedAt: &now})
	dir := filepath.Join(home, ".claude", "projects", "-src-app")
	os.MkdirAll(dir, 0o700)
	lines := []string{
		`{"type":"user","sessionId":"abc-123","message":{"role":"user","content":"[BRIDGE_TRIGGER id=t1 thread=- reason=trigger] hi [/BRIDGE_TRIGGER]"}}`,
		`{"type":"assistant","sessionId":"abc-123","message":{"role":"assistant","content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn"}}`,
	}
	if err := os.WriteFile(filepath.Join(dir, "abc-123.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if sig, err := k.Wait(t.Context(), "t1"); sig != SignalRecord || err != nil {
		t.Fatalf("t1 acked by %q, %v", sig, err)
	}
	waitFor(t, "reply", func() bool { mu.Lock(); defer mu.Unlock(); return replies["t1"].Text == "Hello." })
	waitFor(t, "session id", func() bool { r, _ := rts.Get(""); return r.SessionID == "abc-123" })
	if !k.RecordLive("w.dev") {
		t.Fatal("not live")
	}

	// The program ends: its reader stops.
	rt.Status = nudge.StatusExited
	k.rec.follow(rt)
	if k.RecordLive("w.dev") {
		t.Fatal("still following a runtime that exited")
	}

	// A relaunch whose record is in a format nudge does not know: degraded.
	rt.Status, rt.StatusSince = nudge.StatusStarting, time.Now().Add(time.Second)
	os.WriteFile(filepath.Join(dir, "zzz.jsonl"), []byte("not json at all\n"), 0o600)
	os.Chtimes(filepath.Join(dir, "zzz.jsonl"), time.Now().Add(2*time.Second), time.Now().Add(2*time.Second))
	k.rec.follow(rt)
	waitFor(t, "degraded", func() bool { return k.Degraded()["w.dev"] != "" })
}

// TestTrackerRecordHostileRecord: a runtime whose record is a FIFO (an agent put it where its
// CLI's transcript goes) is degraded, not stuck: its reader does not block, and the
// runtime's deregistering (its reader stopped) and Close return.
func TestTrackerRecordHostileRecord(t *testing.T) {
	profiles, err := panes.LoadProfiles("")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	dir := filepath.Join(home, ".claude", "projects", "-src-app")
	os.MkdirAll(dir, 0o700)
	if err := syscall.Mkfifo(filepath.Join(dir, "abc-123.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rt := nudge.Runtime{RuntimeID: "w.dev", Agent: "claude", Dir: "/src/app", SessionID: "abc-123", Status: nudge.StatusStarting, StatusSince: now, CreatedAt: now}
	k := NewTracker(TrackerConfig{Profiles: profiles, Runtimes: &runtimes{rt: rt},
		Getenv: func(k string) string {
			if k == "HOME" {
				return home
			}
			return ""
		}})
	k.rec.follow(rt)
	waitFor(t, "degraded", func() bool { return strings.Contains(k.Degraded()["w.dev"], "not a regular file") })
	done := make(chan struct{})
	go func() {
		defer close(done)
		rt.Status = nudge.StatusExited
		k.rec.follow(rt) // deregistered: its reader stops
		k.Close()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a hang, not a speed
		t.Fatal("stopping the runtime's reader hung")
	}
}

// twoRuntimes is a registry of several runtimes, by id.
type twoRuntimes struct {
	mu  sync.Mutex
	rts map[string]nudge.Runtime
}

func (r *twoRuntimes) Get(id string) (nudge.Runtime, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt, ok := r.rts[id]
	return rt, ok
}

func (r *twoRuntimes) List() []nudge.Runtime {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []nudge.Runtime
	for _, rt := range r.rts {
		out = append(out, rt)
	}
	return out
}

func (r *twoRuntimes) Update(id string, fn func(*nudge.Runtime)) (nudge.Runtime, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt := r.rts[id]
	fn(&rt)
	r.rts[id] = rt
	return rt, nil
}

// TestSessionOfAnotherRuntimeNotTaken: a record that names the session another live
// runtime holds (an agent that wrote one naming its neighbour's) gives the runtime no
// session id: its prompts and its answers to approvals would go to that session.
func TestSessionOfAnotherRuntimeNotTaken(t *testing.T) {
	profiles, err := panes.LoadProfiles("")
	if err != nil {
		t.Fatal(err)
	}
	const theirs = "01a24f46-783e-7213-88fe-4326a89c2873"
	rts := &twoRuntimes{rts: map[string]nudge.Runtime{
		"w.a": {RuntimeID: "w.a", Agent: "codex", Status: nudge.StatusReady},
		"w.b": {RuntimeID: "w.b", Agent: "codex", Status: nudge.StatusReady, SessionID: theirs},
	}}
	k := NewTracker(TrackerConfig{Profiles: profiles, Runtimes: rts})
	k.rec.Session("w.a", theirs)
	if rt, _ := rts.Get("w.a"); rt.SessionID != "" {
		t.Fatalf("w.a took w.b's session %q", rt.SessionID)
	}
	rts.Update("w.b", func(r *nudge.Runtime) { r.Status = nudge.StatusExited })
	k.rec.Session("w.a", theirs) // the other has ended: a resume of its session may be this one's
	if rt, _ := rts.Get("w.a"); rt.SessionID != theirs {
		t.Fatalf("w.a's session %q once w.b ended, want %q", rt.SessionID, theirs)
	}
	// Another workspace's session, even ended: never (its history, its resume).
	const other = "01a24f46-783e-7213-88fe-4326a89c9999"
	rts.rts["v.c"] = nudge.Runtime{RuntimeID: "v.c", WorkspaceID: "v", Agent: "codex", Status: nudge.StatusExited, SessionID: other}
	rts.Update("w.a", func(r *nudge.Runtime) { r.WorkspaceID = "w" })
	k.rec.Session("w.a", other)
	if rt, _ := rts.Get("w.a"); rt.SessionID == other {
		t.Fatalf("w.a took the session of an ended runtime of another workspace")
	}
}

// TestRefollowBounded: a runtime's record is looked for again at most maxRefollows times a
// minute, however often it shows another runtime's prompts.
func TestRefollowBounded(t *testing.T) {
	w := &watcher{}
	n := 0
	for range 100 {
		if w.refollowAllowed("w.a") {
			n++
		}
	}
	if n != maxRefollows || !w.refollowAllowed("w.b") {
		t.Fatalf("%d looks again allowed, want %d (and another runtime's own)", n, maxRefollows)
	}
}

// TestRecordedBoundPerRuntime: an agent writing envelopes without end into its record
// pushes out only its own remembered prompts, not another runtime's (whose prompt, seen
// in its record before a daemon restart's wait began, then acks it without a second
// typing).
func TestRecordedBoundPerRuntime(t *testing.T) {
	k := NewTracker(TrackerConfig{})
	k.RecordAck("w.b", "theirs", "/b.jsonl:1")
	for i := range 3 * maxRecorded {
		k.RecordAck("w.a", fmt.Sprintf("flood%d", i), "/a.jsonl:1")
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.recorded["w.b\x00theirs"] == "" {
		t.Fatal("another runtime's flood pushed out w.b's prompt")
	}
	if n := len(k.recOrder["w.a"]); n != maxRecorded {
		t.Fatalf("w.a keeps %d, want %d", n, maxRecorded)
	}
}
