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
	want := []struct {
		k    Kind
		text string
	}{
		{SessionKnown, ""},
		{UserMessage, "say hi\nsecond line"},
		{TurnStarted, ""},
		{AssistantText, "Hello from the model stand-in."},
		{TurnEnded, ""},
	}
	if len(evs) != len(want) {
		t.Fatalf("got %d events %+v, want %d", len(evs), evs, len(want))
	}
	for i, w := range want {
		if evs[i].Kind != w.k || evs[i].Text != w.text {
			t.Errorf("#%d: got %v %q, want %v %q", i, evs[i].Kind, evs[i].Text, w.k, w.text)
		}
		if evs[i].SessionID != "01a21145-85b8-7b53-a859-b3bb0d8c659c" {
			t.Errorf("#%d: session %q", i, evs[i].SessionID)
		}
	}
}

func TestCodexUnknownFormat(t *testing.T) {
	if _, err := parseFile(t, Codex{}, "unknown-format.jsonl"); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("got %v, want ErrUnknownFormat", err)
	}
	if _, err := parseFile(t, Codex{}, "claude-2.1.jsonl"); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("a Claude transcript: got %v, want ErrUnknownFormat", err)
	}
}
