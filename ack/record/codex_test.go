package record

import (
	"errors"
	"testing"
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
