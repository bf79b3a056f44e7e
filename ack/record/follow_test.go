package record

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// claudeSpec is a Claude Code runtime in a temporary HOME and its transcript's path.
func claudeSpec(t *testing.T) (Spec, string) {
	t.Helper()
	home := t.TempDir()
	s := Spec{Home: home, Dir: "/home/user/work", Spawned: time.Now().Add(-time.Second), SessionID: "11111111-2222-4333-8444-555555555555"}
	return s, filepath.Join(home, ".claude", "projects", claudeProject(s.Dir), s.SessionID+".jsonl")
}

// next returns the reader's next event or fails after a while.
func next(t *testing.T, r Reader) Event {
	t.Helper()
	select {
	case e, ok := <-r.Events():
		if !ok {
			t.Fatalf("reader ended: %v", r.Err())
		}
		return e
	case <-time.After(30 * time.Second): // generous: a loaded CI machine under -race
		t.Fatalf("no event (path %q)", r.Path())
	}
	return Event{}
}

func kinds(t *testing.T, r Reader, n int) []Event {
	t.Helper()
	var out []Event
	for range n {
		out = append(out, next(t, r))
	}
	return out
}

// TestFollowFindsAndFollows: the reader is opened before the record or its folder
// exists, finds the file when the CLI creates it, and reads lines written in pieces
// (half a line, then the rest) as they come, with the file and line as evidence.
func TestFollowFindsAndFollows(t *testing.T) {
	s, path := claudeSpec(t)
	lines, err := os.ReadFile(filepath.Join("testdata", "claude-2.1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	r := Open(Claude{}, s, Options{})
	defer r.Close()
	time.Sleep(100 * time.Millisecond) // the reader looks and watches before the folder exists
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all := strings.SplitAfter(string(lines), "\n")
	// The first three lines, the third in two writes: the prompt.
	f.WriteString(all[0] + all[1])
	half := len(all[2]) / 2
	f.WriteString(all[2][:half])
	time.Sleep(50 * time.Millisecond)
	f.WriteString(all[2][half:])
	evs := kinds(t, r, 3)
	if evs[0].Kind != SessionKnown || evs[1].Kind != UserMessage || evs[1].Text != "say hi\nsecond line" || evs[2].Kind != TurnStarted {
		t.Fatalf("events %+v", evs)
	}
	if evs[1].File == "" || filepath.Base(evs[1].File) != filepath.Base(path) || evs[1].Line != 3 {
		t.Fatalf("evidence %s:%d", evs[1].File, evs[1].Line)
	}
	for _, l := range all[3:] {
		f.WriteString(l)
	}
	evs = kinds(t, r, 2)
	if evs[0].Kind != AssistantText || evs[0].Text != "Hello from the model stand-in." || evs[1].Kind != TurnEnded {
		t.Fatalf("events %+v", evs)
	}
	if r.Path() == "" {
		t.Fatal("no path")
	}
	if err := r.Close(); err != nil || r.Err() != nil {
		t.Fatalf("close %v, err %v", err, r.Err())
	}
	if _, ok := <-r.Events(); ok {
		t.Fatal("events open after Close")
	}
}

// TestFollowLongLineAndTruncation: a line longer than MaxLine is skipped, the next one
// read; a file truncated and written anew is read from its start.
func TestFollowLongLineAndTruncation(t *testing.T) {
	s, path := claudeSpec(t)
	os.MkdirAll(filepath.Dir(path), 0o700)
	user := `{"type":"user","sessionId":"s1","message":{"role":"user","content":"one"}}` + "\n"
	long := `{"type":"user","message":{"role":"user","content":"` + strings.Repeat("x", MaxLine) + `"}}` + "\n"
	user2 := `{"type":"user","sessionId":"s1","message":{"role":"user","content":"two"}}` + "\n"
	if err := os.WriteFile(path, []byte(user+long+user2), 0o600); err != nil {
		t.Fatal(err)
	}
	r := Open(Claude{}, s, Options{})
	defer r.Close()
	evs := kinds(t, r, 4) // session, user one, turn started, user two
	if evs[1].Text != "one" || evs[3].Kind != UserMessage || evs[3].Text != "two" || evs[3].Line != 3 {
		t.Fatalf("events %+v", evs)
	}
	if n := r.(*follower).Skipped(); n != 1 {
		t.Fatalf("skipped %d, want 1", n)
	}
	// Truncated and started anew: read again from the start.
	if err := os.WriteFile(path, []byte(`{"type":"user","sessionId":"s2","message":{"role":"user","content":"three"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	evs = kinds(t, r, 2)
	if evs[0].Kind != SessionKnown || evs[0].SessionID != "s2" || evs[1].Text != "three" || evs[1].Line != 1 {
		t.Fatalf("after truncation %+v", evs)
	}
}

// TestFollowReplacedFileNotRead: the record file replaced by another under its name (an
// agent that rewrote its record, naming another session, and renamed it into place) is
// not read: the reader ends with ErrReplaced, and the new file's session never shows.
func TestFollowReplacedFileNotRead(t *testing.T) {
	s, path := claudeSpec(t)
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, []byte(`{"type":"user","sessionId":"s1","message":{"role":"user","content":"one"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := Open(Claude{}, s, Options{})
	defer r.Close()
	kinds(t, r, 2) // session s1, user one
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(`{"type":"user","sessionId":"s-other","message":{"role":"user","content":"forged"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	for ev := range r.Events() {
		if ev.SessionID == "s-other" || ev.Text == "forged" {
			t.Fatalf("read the file put in the record's place: %+v", ev)
		}
	}
	if err := r.Err(); !errors.Is(err, ErrReplaced) {
		t.Fatalf("reader ended with %v, want ErrReplaced", err)
	}
}

// TestFollowUnknownFormat: a record that is not the format's ends the reader with
// ErrUnknownFormat (the caller degrades to the screen).
func TestFollowUnknownFormat(t *testing.T) {
	s, path := claudeSpec(t)
	os.MkdirAll(filepath.Dir(path), 0o700)
	b, _ := os.ReadFile(filepath.Join("testdata", "unknown-format.jsonl"))
	os.WriteFile(path, b, 0o600)
	r := Open(Claude{}, s, Options{})
	for range r.Events() {
	}
	if !errors.Is(r.Err(), ErrUnknownFormat) {
		t.Fatalf("err %v, want ErrUnknownFormat", r.Err())
	}
	r.Close()
}

// TestFollowRefusesSymlinkOut: a record that is a symlink leading out of the CLI's
// directory is not read.
func TestFollowRefusesSymlinkOut(t *testing.T) {
	s, path := claudeSpec(t)
	os.MkdirAll(filepath.Dir(path), 0o700)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte(`{"type":"user","message":{"role":"user","content":"x"}}`+"\n"), 0o600)
	if err := os.Symlink(secret, path); err != nil {
		t.Fatal(err)
	}
	r := Open(Claude{}, s, Options{})
	for range r.Events() {
		t.Fatal("read a file outside the CLI's directory")
	}
	if !errors.Is(r.Err(), ErrOutside) {
		t.Fatalf("err %v, want ErrOutside", r.Err())
	}
	r.Close()
}

// TestFollowCloseBeforeFound: Close ends a reader still waiting for its record.
func TestFollowCloseBeforeFound(t *testing.T) {
	s, _ := claudeSpec(t)
	r := Open(Claude{}, s, Options{})
	time.Sleep(50 * time.Millisecond)
	done := make(chan struct{})
	go func() { r.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs")
	}
	if r.Err() != nil || r.Path() != "" {
		t.Fatalf("err %v path %q", r.Err(), r.Path())
	}
}

// TestFollowManyShareOneWatcher: 300 readers (more than the 128 inotify instances a user
// has by default) each find and read their own record: they share one watcher.
func TestFollowManyShareOneWatcher(t *testing.T) {
	home := t.TempDir()
	const n = 300
	readers := make([]Reader, n)
	for i := range n {
		s := Spec{Home: home, Dir: "/w/" + strconv.Itoa(i), Spawned: time.Now().Add(-time.Second), SessionID: "s" + strconv.Itoa(i)}
		readers[i] = Open(Claude{}, s, Options{})
		defer readers[i].Close()
	}
	for i := range n {
		dir := filepath.Join(home, ".claude", "projects", claudeProject("/w/"+strconv.Itoa(i)))
		os.MkdirAll(dir, 0o700)
		line := `{"type":"user","sessionId":"s` + strconv.Itoa(i) + `","message":{"role":"user","content":"hello ` + strconv.Itoa(i) + `"}}` + "\n"
		os.WriteFile(filepath.Join(dir, "s"+strconv.Itoa(i)+".jsonl"), []byte(line), 0o600)
	}
	for i, r := range readers {
		evs := kinds(t, r, 2)
		if evs[1].Kind != UserMessage || evs[1].Text != "hello "+strconv.Itoa(i) {
			t.Fatalf("reader %d: %+v", i, evs)
		}
	}
	// The last reader closed ends the shared watcher (its goroutine joined).
	for _, r := range readers {
		r.Close()
	}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil {
		t.Fatalf("the shared watcher outlived its followers (%d holds)", shared.refs)
	}
}

// TestFollowSameFileAgainReadsOn: an event on the record's name that leaves the same file
// there (renamed away and back, created again under a hard link) opens it again and reads
// on from where the reader was: not its old lines again (a turn's end read anew would end
// the turn a later prompt waits in).
func TestFollowSameFileAgainReadsOn(t *testing.T) {
	s, path := claudeSpec(t)
	os.MkdirAll(filepath.Dir(path), 0o700)
	user := func(text string) string {
		return `{"type":"user","sessionId":"s1","message":{"role":"user","content":"` + text + `"}}` + "\n"
	}
	if err := os.WriteFile(path, []byte(user("one")), 0o600); err != nil {
		t.Fatal(err)
	}
	r := Open(Claude{}, s, Options{})
	defer r.Close()
	if evs := kinds(t, r, 3); evs[1].Text != "one" {
		t.Fatalf("events %+v", evs)
	}
	aside := path + ".aside"
	if err := os.Rename(path, aside); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := os.Rename(aside, path); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(user("two"))
	f.Close()
	for {
		ev := next(t, r)
		if ev.Kind == UserMessage {
			if ev.Text != "two" || ev.Line != 2 {
				t.Fatalf("after the same file came back: %+v (read again from its start?)", ev)
			}
			return
		}
		if ev.Kind == SessionKnown {
			t.Fatalf("the header read again: %+v", ev)
		}
	}
}
