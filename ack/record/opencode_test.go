package record

import (
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOpenCodeParse(t *testing.T) {
	evs, err := parseFile(t, OpenCode{}, "opencode-1.18.33-events.txt")
	if err != nil {
		t.Fatal(err)
	}
	first := "[BRIDGE_TRIGGER id=opencode-00-at-path thread=- reason=trigger] look at @pkg/file.go and say what it does (When you have read this, acknowledge it: print the word ACK_TRIGGER, then a colon, then opencode-00-at-path, with no spaces between them; or run: nudge ack opencode-00-at-path) [/BRIDGE_TRIGGER]"
	second := "[BRIDGE_TRIGGER id=opencode-01-semicolon thread=- reason=trigger] run the tests; (When you have read this, acknowledge it: print the word ACK_TRIGGER, then a colon, then opencode-01-semicolon, with no spaces between them; or run: nudge ack opencode-01-semicolon) [/BRIDGE_TRIGGER]"
	wantEvents(t, evs, "ses_deddd3a17ffe4fHLIo99nO6fR0", []ev{
		{SessionKnown, ""},
		{UserMessage, first},
		{TurnStarted, ""},
		{AssistantText, "Read the task and done.\n\nACK_TRIGGER:opencode-00-at-path"},
		{TurnEnded, ""},
		{UserMessage, second},
		{TurnStarted, ""},
		{AssistantText, "Read the task and done.\n\nACK_TRIGGER:opencode-01-semicolon"},
		{TurnEnded, ""},
	})
}

// A tool call does not end the turn: the assistant message after it does. Text still
// streaming (no end time) is not the reply yet; a synthetic user part is not a prompt; a
// prompt typed while the last one waits is appended to its part, which is read again.
func TestOpenCodeToolCallsAndPartials(t *testing.T) {
	lines := []string{
		`message.updated.1 {"sessionID":"s1","info":{"id":"u1","role":"user"}}`,
		`message.part.updated.1 {"sessionID":"s1","part":{"id":"p0","messageID":"u1","type":"text","text":"file contents","synthetic":true}}`,
		`message.part.updated.1 {"sessionID":"s1","part":{"id":"p1","messageID":"u1","type":"text","text":"do it"}}`,
		`message.part.updated.1 {"sessionID":"s1","part":{"id":"p1","messageID":"u1","type":"text","text":"do it"}}`,
		`message.part.updated.1 {"sessionID":"s1","part":{"id":"p1","messageID":"u1","type":"text","text":"do it[and this]"}}`,
		`message.updated.1 {"sessionID":"s1","info":{"id":"a1","role":"assistant","parentID":"u1","time":{"created":1}}}`,
		`message.part.updated.1 {"sessionID":"s1","part":{"id":"p2","messageID":"a1","type":"text","text":"Look"}}`,
		`message.part.updated.1 {"sessionID":"s1","part":{"id":"p2","messageID":"a1","type":"text","text":"Looking.","time":{"end":2}}}`,
		`message.updated.1 {"sessionID":"s1","info":{"id":"a1","role":"assistant","parentID":"u1","finish":"tool-calls","time":{"created":1,"completed":3}}}`,
		`message.updated.1 {"sessionID":"s1","info":{"id":"a2","role":"assistant","parentID":"u1","time":{"created":4}}}`,
		`message.part.updated.1 {"sessionID":"s1","part":{"id":"p3","messageID":"a2","type":"text","text":"Done.","time":{"end":5}}}`,
		`message.updated.1 {"sessionID":"s1","info":{"id":"a2","role":"assistant","parentID":"u1","finish":"stop","time":{"created":4,"completed":6}}}`,
		`message.updated.1 {"sessionID":"s1","info":{"id":"a2","role":"assistant","parentID":"u1","finish":"stop","time":{"created":4,"completed":6}}}`,
		`garbage`, `message.updated.1 {not json`,
	}
	var st State
	var evs []Event
	for _, l := range lines {
		st.Line++
		var err error
		if evs, err = (OpenCode{}).Parse(evs, &st, []byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	wantEvents(t, evs, "s1", []ev{
		{SessionKnown, ""}, {UserMessage, "do it"}, {UserMessage, "do it[and this]"}, {TurnStarted, ""},
		{AssistantText, "Looking."}, {AssistantText, "Done."}, {TurnEnded, ""},
	})
}

// ocDB makes an OpenCode-shaped database under home's data directory.
func ocDB(t *testing.T, home string) (*sql.DB, string) {
	t.Helper()
	dir := filepath.Join(home, ".local", "share", "opencode")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "opencode.db")
	u := url.URL{Scheme: "file", Path: path, RawQuery: "_pragma=journal_mode(wal)&_pragma=busy_timeout(5000)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		"CREATE TABLE session (id text PRIMARY KEY, directory text NOT NULL, parent_id text, time_created integer NOT NULL)",
		"CREATE TABLE event (id text PRIMARY KEY, aggregate_id text NOT NULL, seq integer NOT NULL, type text NOT NULL, data text NOT NULL)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return db, path
}

func ocEvent(t *testing.T, db *sql.DB, session string, seq int, typ, data string) {
	t.Helper()
	if _, err := db.Exec("INSERT INTO event VALUES (?, ?, ?, ?, ?)", session+"-"+typ+"-"+strings.Repeat("x", seq), session, seq, typ, data); err != nil {
		t.Fatal(err)
	}
}

// The follower finds this runtime's session in the shared database (not an older one,
// not one of another directory, not an excluded one) and reads its rows as they come.
func TestOpenCodeFollow(t *testing.T) {
	home := t.TempDir()
	s := Spec{Home: home, Dir: "/home/user/proj", Spawned: time.Now().Add(-time.Second)}
	r := Open(OpenCode{}, s, Options{Rescan: 100 * time.Millisecond})
	defer r.Close()
	db, path := ocDB(t, home)
	now := time.Now().UnixMilli()
	for _, row := range [][]any{
		{"ses_old", "/home/user/proj", now - 60_000},
		{"ses_other", "/home/user/other", now},
		{"ses_taken", "/home/user/proj", now},
		{"ses_mine", "/home/user/proj", now + 1},
	} {
		if _, err := db.Exec("INSERT INTO session (id, directory, time_created) VALUES (?, ?, ?)", row...); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	real, _ := filepath.EvalSymlinks(path)
	s.Exclude = map[string]bool{real + "#ses_taken": true}
	r = Open(OpenCode{}, s, Options{Rescan: 100 * time.Millisecond})
	defer r.Close()
	ocEvent(t, db, "ses_taken", 0, "message.updated.1", `{"sessionID":"ses_taken","info":{"id":"u0","role":"user"}}`)
	ocEvent(t, db, "ses_mine", 0, "session.created.1", `{"sessionID":"ses_mine","info":{"id":"ses_mine"}}`)
	if e := next(t, r); e.Kind != SessionKnown || e.SessionID != "ses_mine" || e.Line != 2 || e.File != real+"#ses_mine" {
		t.Fatalf("first event %+v", e)
	}
	ocEvent(t, db, "ses_mine", 1, "message.updated.1", `{"sessionID":"ses_mine","info":{"id":"u1","role":"user"}}`)
	ocEvent(t, db, "ses_mine", 2, "message.part.updated.1", `{"sessionID":"ses_mine","part":{"id":"p1","messageID":"u1","type":"text","text":"hello"}}`)
	if e := next(t, r); e.Kind != UserMessage || e.Text != "hello" || e.Line != 4 {
		t.Fatalf("prompt %+v", e)
	}
	if r.Path() != real+"#ses_mine" {
		t.Fatalf("path %q", r.Path())
	}
	// The TUI opens a new session in the same directory: the runtime's prompts go on there.
	if _, err := db.Exec("INSERT INTO session (id, directory, time_created) VALUES ('ses_next', '/home/user/proj', ?)", now+2); err != nil {
		t.Fatal(err)
	}
	ocEvent(t, db, "ses_next", 0, "session.created.1", `{"sessionID":"ses_next","info":{"id":"ses_next"}}`)
	ocEvent(t, db, "ses_next", 1, "message.updated.1", `{"sessionID":"ses_next","info":{"id":"u2","role":"user"}}`)
	ocEvent(t, db, "ses_next", 2, "message.part.updated.1", `{"sessionID":"ses_next","part":{"id":"p2","messageID":"u2","type":"text","text":"again"}}`)
	if e := next(t, r); e.Kind != SessionKnown || e.SessionID != "ses_next" || e.File != real+"#ses_next" {
		t.Fatalf("the new session %+v", e)
	}
	if e := next(t, r); e.Kind != UserMessage || e.Text != "again" || e.SessionID != "ses_next" {
		t.Fatalf("its prompt %+v", e)
	}
}

// A session without OpenCode's event log is a format the reader does not know.
func TestOpenCodeUnknownLayout(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".local", "share", "opencode")
	os.MkdirAll(dir, 0o700)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "opencode.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE session (id text, directory text, parent_id text, time_created integer)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO session VALUES ('s', '/p', NULL, ?)", time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	r := Open(OpenCode{}, Spec{Home: home, Dir: "/p", Spawned: time.Now().Add(-time.Second)}, Options{})
	defer r.Close()
	for range r.Events() {
	}
	if !errors.Is(r.Err(), ErrUnknownFormat) {
		t.Fatalf("err %v", r.Err())
	}
}

func TestOpenCodeRoot(t *testing.T) {
	if got := (OpenCode{}).Root(Spec{Home: "/h", Env: map[string]string{"XDG_DATA_HOME": "/d"}}); got != "/d/opencode" {
		t.Fatal(got)
	}
	if got := (OpenCode{}).Root(Spec{Home: "/h", Env: map[string]string{"XDG_DATA_HOME": "rel"}}); got != "/h/.local/share/opencode" {
		t.Fatal(got)
	}
}

// A prompt queued while a turn runs: OpenCode writes its user message before the running
// turn ends, and updates the older user message again meanwhile; the queued one's part
// is its prompt all the same, and each turn names the message it answers.
func TestOpenCodeQueuedTurns(t *testing.T) {
	lines := []string{
		`message.updated.1 {"sessionID":"s1","info":{"id":"u1","role":"user","time":{"created":10}}}`,
		`message.part.updated.1 {"sessionID":"s1","part":{"id":"p1","messageID":"u1","type":"text","text":"first"}}`,
		`message.updated.1 {"sessionID":"s1","info":{"id":"a1","role":"assistant","parentID":"u1","time":{"created":11}}}`,
		`message.updated.1 {"sessionID":"s1","info":{"id":"u2","role":"user","time":{"created":12}}}`,
		`message.updated.1 {"sessionID":"s1","info":{"id":"u1","role":"user","time":{"created":10}}}`,
		`message.part.updated.1 {"sessionID":"s1","part":{"id":"p2","messageID":"u2","type":"text","text":"second"}}`,
		`message.part.updated.1 {"sessionID":"s1","part":{"id":"p3","messageID":"a1","type":"text","text":"one","time":{"end":13}}}`,
		`message.updated.1 {"sessionID":"s1","info":{"id":"a1","role":"assistant","parentID":"u1","finish":"stop","time":{"created":11,"completed":14}}}`,
		`message.updated.1 {"sessionID":"s1","info":{"id":"a2","role":"assistant","parentID":"u2","time":{"created":15}}}`,
		`message.part.updated.1 {"sessionID":"s1","part":{"id":"p4","messageID":"a2","type":"text","text":"two","time":{"end":16}}}`,
		`message.updated.1 {"sessionID":"s1","info":{"id":"a2","role":"assistant","parentID":"u2","finish":"stop","time":{"created":15,"completed":17}}}`,
	}
	var st State
	var evs []Event
	for _, l := range lines {
		st.Line++
		var err error
		if evs, err = (OpenCode{}).Parse(evs, &st, []byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	type kt struct {
		k          Kind
		text, turn string
	}
	want := []kt{{SessionKnown, "", ""}, {UserMessage, "first", "u1"}, {TurnStarted, "", "u1"}, {UserMessage, "second", "u2"},
		{AssistantText, "one", "u1"}, {TurnEnded, "", "u1"}, {TurnStarted, "", "u2"}, {AssistantText, "two", "u2"}, {TurnEnded, "", "u2"}}
	var got []kt
	for _, e := range evs {
		got = append(got, kt{e.Kind, e.Text, e.Turn})
	}
	if len(got) != len(want) {
		t.Fatalf("events %+v\nwant %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("event %d: %+v, want %+v\nall: %+v", i, got[i], want[i], got)
		}
	}
}
