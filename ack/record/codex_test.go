package record

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCodexParse(t *testing.T) {
	evs, err := parseFile(t, Codex{}, "codex-rollout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, evs, "01a21145-85b8-7b53-a859-b3bb0d8c659c", []ev{
		{SessionKnown, ""},
		{UserMessage, "say hi\nsecond line"},
		{TurnStarted, ""},
		{AssistantText, "Hello from the model stand-in."},
		{TurnEnded, ""},
	})
}

func TestCodexUnknownFormat(t *testing.T) {
	if _, err := parseFile(t, Codex{}, "unknown-format.jsonl"); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("got %v, want ErrUnknownFormat", err)
	}
	if _, err := parseFile(t, Codex{}, "claude-2.1.jsonl"); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("a Claude transcript: got %v, want ErrUnknownFormat", err)
	}
}

// TestNamesSession: a format believes the session id a file's content names only when the
// file's name carries it, as the CLI names its files.
func TestNamesSession(t *testing.T) {
	const id = "01a24f46-783e-7213-88fe-4326a89c2873"
	for _, c := range []struct {
		f    Format
		file string
		want bool
	}{
		{Codex{}, "/h/.codex/sessions/2026/12/07/rollout-2026-12-07T10-00-00-" + id + ".jsonl", true},
		{Codex{}, "/h/.codex/sessions/2026/12/07/rollout-0-ffff.jsonl", false},
		{Codex{}, "/h/.codex/sessions/2026/12/07/" + id + ".jsonl", false},
		{Claude{}, "/h/.claude/projects/-w/" + id + ".jsonl", true},
		{Claude{}, "/h/.claude/projects/-w/x" + id + ".jsonl", false},
		{Gemini{}, "/h/.gemini/tmp/w/chats/session-2026-12-07T10-00-01a24f46.jsonl", true},
		{Gemini{}, "/h/.gemini/tmp/w/chats/session-2026-12-07T10-00-ffffffff.jsonl", false},
		{Pi{}, "/h/.pi/agent/sessions/--w--/2026-12-07T10-00-00-000Z_" + id + ".jsonl", true},
		{Pi{}, "/h/.pi/agent/sessions/--w--/2026-12-07T10-00-00-000Z_other.jsonl", false},
		{OpenCode{}, "/h/.local/share/opencode/opencode.db#ses_1", true}, // a database's rows: no name to carry it
	} {
		if got := NamesSession(c.f, c.file, id); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.f.Name(), c.file, got, c.want)
		}
	}
}

// A record written "in the future" (its time set by hand to be the newest) is not taken
// for the runtime's.
func TestNewestSincePassesOverTheFuture(t *testing.T) {
	dir := t.TempDir()
	real, planted := filepath.Join(dir, "real.jsonl"), filepath.Join(dir, "planted.jsonl")
	os.WriteFile(real, []byte("{}\n"), 0o600)
	os.WriteFile(planted, []byte("{}\n"), 0o600)
	future := time.Now().Add(24 * time.Hour)
	os.Chtimes(planted, future, future)
	got, err := newestSince(dir, ".jsonl", Spec{Spawned: time.Now().Add(-time.Minute)})
	if err != nil || got != real {
		t.Fatalf("newest: %q %v, want %q", got, err, real)
	}
}
