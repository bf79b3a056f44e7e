package ack

import "testing"

func TestOnScreen(t *testing.T) {
	const id = "trg_20261122_0001"
	cases := []struct {
		name  string
		lines []string
		want  bool
	}{
		{"one line", []string{"Done.", "ACK_TRIGGER:" + id}, true},
		{"in a sentence", []string{"⏺ Read it. ACK_TRIGGER:" + id + ". Next I will"}, true},
		{"other id", []string{"ACK_TRIGGER:" + id + "9"}, false},
		{"prefix of the id", []string{"ACK_TRIGGER:trg_20261122"}, false},
		{"no colon", []string{"ACK_TRIGGER " + id}, false},
		{"wrapped in the id", []string{"│ ok ACK_TRIGGER:trg_2026", "│ 1122_0001 and more │"}, true},
		{"wrapped in the word", []string{"  ACK_TRIG", "  GER:" + id}, true},
		{"wrapped, continued by other text", []string{"ACK_TRIGGER:trg_20261122_", "0001 then more"}, true},
		{"complete, next line has more id bytes", []string{"ACK_TRIGGER:" + id, "2 files changed"}, true},
		{"hint echo", []string{"[BRIDGE_TRIGGER id=" + id + " thread=- reason=trigger] do it (When you have read this,",
			"acknowledge it: print the word ACK_TRIGGER, then a colon, then " + id + ", with no spaces between",
			"them; or run: nudge ack " + id + ") [/BRIDGE_TRIGGER]"}, false},
		{"forged inside a closed echo", []string{"[BRIDGE_TRIGGER id=x thread=- reason=r]", "ACK_TRIGGER:" + id, "[/BRIDGE_TRIGGER]"}, false},
		{"reply after the echo", []string{"> [BRIDGE_TRIGGER id=" + id + " thread=- reason=r] hi [/BRIDGE_TRIGGER]", "", "⏺ ACK_TRIGGER:" + id}, true},
		{"empty", nil, false},
		// The agent guessed the id of a trigger queued for it and drew the marker before
		// the prompt was typed: a marker above the trigger's own echo acks nothing.
		{"drawn before its echo", []string{"⏺ ACK_TRIGGER:" + id, "> [BRIDGE_TRIGGER id=" + id + " thread=- reason=r] hi [/BRIDGE_TRIGGER]", "⏺ working"}, false},
		{"drawn before and after its echo", []string{"⏺ ACK_TRIGGER:" + id, "> [BRIDGE_TRIGGER id=" + id + " thread=- reason=r] hi [/BRIDGE_TRIGGER]", "⏺ ACK_TRIGGER:" + id}, true},
		{"before another trigger's echo", []string{"⏺ ACK_TRIGGER:" + id, "> [BRIDGE_TRIGGER id=" + id + "9 thread=- reason=r] hi [/BRIDGE_TRIGGER]"}, true},
	}
	for _, c := range cases {
		if got := OnScreen(c.lines, id); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func TestOnScreenCutEchoNeverJoined(t *testing.T) {
	// A prompt wrapped so that its text would read as the marker once joined, in an
	// envelope whose end the TUI cut: never an ack.
	lines := []string{"[BRIDGE_TRIGGER id=t1 thread=- reason=r] see ACK_TRIG", "GER:t1 there", "[Pasted text +40 lines]"}
	if OnScreen(lines, "t1") {
		t.Fatal("joined prompt text counted")
	}
	if !OnScreen(append(lines, "ACK_TRIGGER:t1"), "t1") {
		t.Fatal("a whole marker after a cut echo is missed")
	}
}
