package record

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestGeminiParse(t *testing.T) {
	evs, err := parseFile(t, Gemini{}, "gemini-0.61.0.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, evs, "af09f741-c8c1-4718-a4bc-01dcea4e0117", []ev{
		{SessionKnown, ""},
		{UserMessage, "PROMPT-ALPHA first prompt"},
		{TurnStarted, ""},
		{AssistantText, "REPLY-ONE line one\nline two of the reply"},
		{TurnEnded, ""},
		{UserMessage, "PROMPT-BETA queued while busy"},
		{TurnStarted, ""},
		{AssistantText, "REPLY-ONE line one\nline two of the reply"},
		{TurnEnded, ""},
	})
}

// TestGeminiTruncated: a record cut mid-line reads up to its last whole line (the
// follower never hands Parse a partial line; here the cut line is whole-but-invalid).
func TestGeminiTruncated(t *testing.T) {
	evs, err := parseFile(t, Gemini{}, "gemini-truncated.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[1].Text != "PROMPT-ALPHA first prompt" {
		t.Fatalf("events %+v", evs)
	}
}

func TestGeminiUnknownFormat(t *testing.T) {
	for _, f := range []string{"unknown-format.jsonl", "claude-2.1.jsonl", "codex-rollout.jsonl"} {
		if _, err := parseFile(t, Gemini{}, f); !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("%s: got %v, want ErrUnknownFormat", f, err)
		}
	}
}

// TestGeminiLocate: the project's short name comes from projects.json; the session by the
// first 8 characters of its id, else the newest since the spawn.
func TestGeminiLocate(t *testing.T) {
	home := t.TempDir()
	s := Spec{Home: home, Dir: "/home/dev/proj", Spawned: time.Now().Add(-time.Minute)}
	if _, err := (Gemini{}).Locate(s); !errors.Is(err, ErrNotYet) {
		t.Fatalf("before projects.json: %v", err)
	}
	root := filepath.Join(home, ".gemini")
	os.MkdirAll(filepath.Join(root, "tmp", "proj", "chats"), 0o700)
	os.WriteFile(filepath.Join(root, "projects.json"), []byte(`{"projects":{"/home/dev/proj":"proj","/elsewhere":"../../etc"}}`), 0o600)
	if d := (Gemini{}).Dirs(s); len(d) != 1 || d[0] != filepath.Join(root, "tmp", "proj", "chats") {
		t.Fatalf("dirs %v", d)
	}
	f := filepath.Join(root, "tmp", "proj", "chats", "session-2026-11-25T05-42-af09f741.jsonl")
	os.WriteFile(f, []byte("{}\n"), 0o600)
	if p, err := (Gemini{}).Locate(s); err != nil || p != f {
		t.Fatalf("newest: %q %v", p, err)
	}
	s.SessionID = "af09f741-c8c1-4718-a4bc-01dcea4e0117"
	if p, err := (Gemini{}).Locate(s); err != nil || p != f {
		t.Fatalf("by session id: %q %v", p, err)
	}
	if _, err := (Gemini{}).Locate(Spec{Home: home, Dir: "/elsewhere"}); !errors.Is(err, ErrNotYet) {
		t.Fatalf("a project name leading out: %v", err)
	}
}

// geminiFeed feeds lines to Gemini's Parse as lines 1, 2, ... of one file.
func geminiFeed(t *testing.T, lines ...string) []Event {
	t.Helper()
	var st State
	var evs []Event
	for _, l := range lines {
		st.Line++
		var err error
		if evs, err = (Gemini{}).Parse(evs, &st, []byte(l)); err != nil {
			t.Fatalf("line %d: %v", st.Line, err)
		}
	}
	return evs
}

type geminiWant struct {
	k    Kind
	text string
}

func geminiExpect(t *testing.T, evs []Event, want []geminiWant) {
	t.Helper()
	if len(evs) != len(want) {
		t.Fatalf("got %d events %+v, want %d", len(evs), evs, len(want))
	}
	for i, w := range want {
		if evs[i].Kind != w.k || evs[i].Text != w.text {
			t.Errorf("#%d: got %v %q, want %v %q", i, evs[i].Kind, evs[i].Text, w.k, w.text)
		}
	}
}

const geminiHeader = `{"sessionId":"s","projectHash":"h","startTime":"2026-11-25T05:42:18.936Z","kind":"main"}`

// A user message comes only from a user line of the user's: not from a reply that looks
// like a prompt, a tool's result, the CLI's own context, a thought or a history rewrite.
func TestGeminiRoleOnly(t *testing.T) {
	evs := geminiFeed(t, geminiHeader,
		`{"$set":{"messages":[{"id":"a","type":"user","content":[{"text":"[BRIDGE_TRIGGER id=a]"}]}]}}`,
		`{"id":"b","type":"gemini","content":"[BRIDGE_TRIGGER id=b]"}`,
		`{"id":"c","type":"info","content":[{"text":"[BRIDGE_TRIGGER id=c]"}]}`,
		`{"id":"d","type":"user","content":[{"functionResponse":{"id":"x","name":"shell","response":{"output":"[BRIDGE_TRIGGER id=d]"}}}]}`,
		`{"id":"e","type":"user","content":[{"text":"<session_context>\nThis is the Gemini CLI.\n</session_context>"}]}`,
		`{"id":"f","type":"user","content":[{"text":"[BRIDGE_TRIGGER id=f]","thought":true}]}`,
		`{"type":"user","content":[{"text":"[BRIDGE_TRIGGER id=g]"}]}`,
		`{"id":"h","type":"user","content":[{"text":"[BRIDGE_TRIGGER id=h]`,
	)
	for _, e := range evs {
		if e.Kind == UserMessage {
			t.Errorf("got a user message %q", e.Text)
		}
	}
}

// A turn that calls tools: the reply is written before its tools run (a reply without
// text goes on), appended again with its toolCalls after; the tool's result is a user
// line. A reply with text before a tool call reads as the end, and its continuation starts
// the turn again; a reply appended again (tokens) is read once; the final reply ends it.
func TestGeminiToolTurn(t *testing.T) {
	evs := geminiFeed(t, geminiHeader,
		`{"id":"u1","type":"user","content":"look at x"}`,
		`{"id":"r1","type":"gemini","content":"","thoughts":[]}`,
		`{"$set":{"lastUpdated":"2026-11-25T05:42:28.939Z"}}`,
		`{"id":"r1","type":"gemini","content":"","toolCalls":[{"id":"c1","name":"read_file"}]}`,
		`{"id":"u2","type":"user","content":[{"functionResponse":{"id":"c1","name":"read_file","response":{}}}]}`,
		`{"id":"r2","type":"gemini","content":"I will read y too."}`,
		`{"id":"r2","type":"gemini","content":"I will read y too.","toolCalls":[{"id":"c2","name":"read_file"}]}`,
		`{"id":"u3","type":"user","content":[{"functionResponse":{"id":"c2","name":"read_file","response":{}}}]}`,
		`{"id":"r3","type":"gemini","content":"x says hi."}`,
		`{"id":"r3","type":"gemini","content":"x says hi.","tokens":{"total":3}}`,
		`{"$rewindTo":"u1"}`,
	)
	geminiExpect(t, evs, []geminiWant{
		{SessionKnown, ""},
		{UserMessage, "look at x"},
		{TurnStarted, ""},
		{AssistantText, "I will read y too."},
		{TurnEnded, ""},
		{TurnStarted, ""},
		{AssistantText, "x says hi."},
		{TurnEnded, ""},
	})
}

// A prompt's line is written when its turn starts: it ends a turn still open (cancelled
// before any answer).
func TestGeminiCancelledTurn(t *testing.T) {
	evs := geminiFeed(t, geminiHeader,
		`{"id":"u1","type":"user","content":[{"text":"one"}]}`,
		`{"id":"u2","type":"user","content":[{"text":"two"}]}`,
		`{"id":"r1","type":"gemini","content":[{"text":"Binary content received.","thought":true}]}`,
		`{"id":"r2","type":"gemini","content":[{"text":"two: "},"done"]}`,
	)
	geminiExpect(t, evs, []geminiWant{
		{SessionKnown, ""},
		{UserMessage, "one"},
		{TurnStarted, ""},
		{TurnEnded, ""},
		{UserMessage, "two"},
		{TurnStarted, ""},
		{AssistantText, "two: done"},
		{TurnEnded, ""},
	})
}

// The CLI registers its cwd with symlinks resolved (the process's cwd).
func TestGeminiLocateSymlinkedCwd(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "real")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	target, _ = filepath.EvalSymlinks(target)
	root := filepath.Join(base, ".gemini")
	chats := filepath.Join(root, "tmp", "real", "chats")
	if err := os.MkdirAll(chats, 0o700); err != nil {
		t.Fatal(err)
	}
	reg, _ := json.Marshal(map[string]map[string]string{"projects": {target: "real"}})
	if err := os.WriteFile(filepath.Join(root, "projects.json"), reg, 0o600); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(chats, "session-2026-11-25T05-42-af09f741.jsonl")
	if err := os.WriteFile(f, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := Spec{Home: base, Dir: link, Spawned: time.Now().Add(-time.Minute)}
	if p, err := (Gemini{}).Locate(s); err != nil || p != f {
		t.Fatalf("got %q %v, want %q", p, err, f)
	}
}
