package record

import (
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
	want := []struct {
		k    Kind
		text string
	}{
		{SessionKnown, ""},
		{UserMessage, "PROMPT-ALPHA first prompt"},
		{TurnStarted, ""},
		{AssistantText, "REPLY-ONE line one\nline two of the reply"},
		{TurnEnded, ""},
		{UserMessage, "PROMPT-BETA queued while busy"},
		{TurnStarted, ""},
		{AssistantText, "REPLY-ONE line one\nline two of the reply"},
		{TurnEnded, ""},
	}
	if len(evs) != len(want) {
		t.Fatalf("got %d events %+v, want %d", len(evs), evs, len(want))
	}
	for i, w := range want {
		if evs[i].Kind != w.k || evs[i].Text != w.text {
			t.Errorf("#%d: got %v %q, want %v %q", i, evs[i].Kind, evs[i].Text, w.k, w.text)
		}
		if evs[i].SessionID != "af09f741-c8c1-4718-a4bc-01dcea4e0117" {
			t.Errorf("#%d: session %q", i, evs[i].SessionID)
		}
	}
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
	s := Spec{Home: home, Dir: "/work/proj", Spawned: time.Now().Add(-time.Minute)}
	if _, err := (Gemini{}).Locate(s); !errors.Is(err, ErrNotYet) {
		t.Fatalf("before projects.json: %v", err)
	}
	root := filepath.Join(home, ".gemini")
	os.MkdirAll(filepath.Join(root, "tmp", "proj", "chats"), 0o700)
	os.WriteFile(filepath.Join(root, "projects.json"), []byte(`{"projects":{"/work/proj":"proj","/elsewhere":"../../etc"}}`), 0o600)
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
