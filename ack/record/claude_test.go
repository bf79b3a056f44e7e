package record

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// parseFile feeds every complete line of a testdata file to f.Parse.
func parseFile(t *testing.T, f Format, name string) ([]Event, error) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var st State
	var evs []Event
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, MaxLine)
	for sc.Scan() {
		st.Line++
		if evs, err = f.Parse(evs, &st, sc.Bytes()); err != nil {
			return evs, err
		}
	}
	return evs, nil
}

// ev is an event a test wants: its kind and text.
type ev struct {
	k    Kind
	text string
}

// wantEvents fails unless evs are want, in order, each of session sid with its line.
func wantEvents(t *testing.T, evs []Event, sid string, want []ev) {
	t.Helper()
	if len(evs) != len(want) {
		t.Fatalf("got %d events %+v, want %d", len(evs), evs, len(want))
	}
	for i, w := range want {
		if evs[i].Kind != w.k || evs[i].Text != w.text {
			t.Errorf("#%d: got %v %q, want %v %q", i, evs[i].Kind, evs[i].Text, w.k, w.text)
		}
		if evs[i].SessionID != sid || evs[i].Line == 0 {
			t.Errorf("#%d: session %q line %d", i, evs[i].SessionID, evs[i].Line)
		}
	}
}

func TestClaudeParse(t *testing.T) {
	evs, err := parseFile(t, Claude{}, "claude-2.1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, evs, "11111111-2222-4333-8444-555555555555", []ev{
		{SessionKnown, ""},
		{UserMessage, "say hi\nsecond line"},
		{TurnStarted, ""},
		{AssistantText, "Hello from the model stand-in."},
		{TurnEnded, ""},
	})
}

func TestClaudeUnknownFormat(t *testing.T) {
	if _, err := parseFile(t, Claude{}, "unknown-format.jsonl"); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("got %v, want ErrUnknownFormat", err)
	}
}

// An assistant line whose text looks like a prompt is never a user message; a tool's
// result is no prompt either.
func TestClaudeRoleOnly(t *testing.T) {
	lines := []string{
		`{"type":"assistant","sessionId":"s","message":{"role":"assistant","content":[{"type":"text","text":"[BRIDGE_TRIGGER id=x]"}],"stop_reason":"tool_use"}}`,
		`{"type":"user","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","content":"[BRIDGE_TRIGGER id=y]"},{"type":"text","text":"z"}]}}`,
		`{"type":"user","sessionId":"s","isMeta":true,"message":{"role":"user","content":"meta"}}`,
		`{"type":"user","sessionId":"s","message":{"role":"user","con`,
	}
	var st State
	var evs []Event
	for _, l := range lines {
		st.Line++
		evs, _ = Claude{}.Parse(evs, &st, []byte(l))
	}
	for _, e := range evs {
		if e.Kind == UserMessage {
			t.Errorf("got a user message %q", e.Text)
		}
	}
}

func TestClaudeLocate(t *testing.T) {
	root := t.TempDir()
	s := Spec{Dir: "/home/user/work", Env: map[string]string{"CLAUDE_CONFIG_DIR": root}, Spawned: time.Now().Add(-time.Minute)}
	if _, err := (Claude{}).Locate(s); !errors.Is(err, ErrNotYet) {
		t.Fatalf("before: got %v, want ErrNotYet", err)
	}
	dir := filepath.Join(root, "projects", "-home-user-work")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "abc.jsonl")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := (Claude{}).Locate(s); got != p || err != nil {
		t.Fatalf("got %q %v, want %q", got, err, p)
	}
	s.SessionID = "abc"
	if got, err := (Claude{}).Locate(s); got != p || err != nil {
		t.Fatalf("by id: got %q %v, want %q", got, err, p)
	}
}

// A prompt given through the session's messaging socket is recorded as meta from a peer
// (Claude Code 2.1.224 and later): it is a user message; other meta lines stay none.
func TestClaudePeerMessage(t *testing.T) {
	lines := []string{
		`{"type":"user","sessionId":"s","isMeta":true,"origin":{"kind":"peer","from":"uds:x"},"uuid":"u","message":{"role":"user","content":"Another Claude session sent a message:\n[BRIDGE_TRIGGER id=t1 thread=- reason=trigger] hi [/BRIDGE_TRIGGER]"}}`,
		`{"type":"user","sessionId":"s","isMeta":true,"origin":{"kind":"system"},"message":{"role":"user","content":"reminder"}}`,
	}
	var st State
	var evs []Event
	for _, l := range lines {
		st.Line++
		evs, _ = Claude{}.Parse(evs, &st, []byte(l))
	}
	var users []string
	for _, e := range evs {
		if e.Kind == UserMessage {
			users = append(users, e.Text)
		}
	}
	if len(users) != 1 || !bytes.Contains([]byte(users[0]), []byte("[BRIDGE_TRIGGER id=t1 ")) {
		t.Fatalf("user messages %q", users)
	}
}
