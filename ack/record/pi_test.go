package record

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestPiParse(t *testing.T) {
	evs, err := parseFile(t, Pi{}, "pi-0.73.1.jsonl")
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
		if evs[i].SessionID != "01a21139-e65d-70d7-9119-8b76db21db7f" {
			t.Errorf("#%d: session %q", i, evs[i].SessionID)
		}
	}
}

func TestPiTruncatedAndUnknown(t *testing.T) {
	if _, err := parseFile(t, Pi{}, "pi-truncated.jsonl"); err != nil {
		t.Fatalf("truncated: %v", err)
	}
	for _, f := range []string{"unknown-format.jsonl", "claude-2.1.jsonl", "gemini-0.61.0.jsonl", "codex-rollout.jsonl"} {
		if _, err := parseFile(t, Pi{}, f); !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("%s: got %v, want ErrUnknownFormat", f, err)
		}
	}
}

func TestPiLocate(t *testing.T) {
	home := t.TempDir()
	s := Spec{Home: home, Dir: "/home/user/proj", Spawned: time.Now().Add(-time.Minute)}
	dir := filepath.Join(home, ".pi", "agent", "sessions", "--home-user-proj--")
	if d := (Pi{}).Dirs(s); d[0] != dir {
		t.Fatalf("dirs %v", d)
	}
	if _, err := (Pi{}).Locate(s); !errors.Is(err, ErrNotYet) {
		t.Fatalf("before: %v", err)
	}
	os.MkdirAll(dir, 0o700)
	f := filepath.Join(dir, "2026-11-25T05-42-16-925Z_01a21139-e65d-70d7-9119-8b76db21db7f.jsonl")
	os.WriteFile(f, []byte("{}\n"), 0o600)
	if p, err := (Pi{}).Locate(s); err != nil || p != f {
		t.Fatalf("newest: %q %v", p, err)
	}
	s.SessionID = "01a21139-e65d-70d7-9119-8b76db21db7f"
	if p, err := (Pi{}).Locate(s); err != nil || p != f {
		t.Fatalf("by id: %q %v", p, err)
	}
	s.Env = map[string]string{"PI_CODING_AGENT_SESSION_DIR": "/srv/pi"}
	if d := (Pi{}).Dirs(s); d[0] != "/srv/pi" || (Pi{}).Root(s) != "/srv/pi" {
		t.Fatalf("session dir %v", d)
	}
}
