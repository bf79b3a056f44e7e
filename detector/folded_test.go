package detector

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOursFoldedPaste checks each pack's folded-paste placeholders against what nudge
// typed: the sizes must add up, the text outside them must be part of it.
func TestOursFoldedPaste(t *testing.T) {
	packs := defaultPacks(t)
	one := "[BRIDGE_TRIGGER id=t1 thread= reason=trigger] " + strings.Repeat("word ", 1124) + "[/BRIDGE_TRIGGER]"
	multi := "[BRIDGE_TRIGGER id=t2 thread= reason=trigger]\n" + strings.Repeat("a line of the prompt\n", 40) + "[/BRIDGE_TRIGGER]"
	n := len([]rune(one))
	for i, tt := range []struct {
		pack, composer, typed string
		want                  bool
	}{
		// The screen: Codex folded a ~5.6 KB paste burst into two placeholders.
		{"codex", "[Pasted Content 4096 chars][Pasted Content " + strconv.Itoa(n-4096) + " chars]", one, true},
		{"codex", "[Pasted Content " + strconv.Itoa(n) + " chars]", one, true},
		{"codex", "[BRIDGE_TRIGGER id=t1 [Pasted Content " + strconv.Itoa(n-21) + " chars]", one, true},
		{"codex", "[Pasted Content 900 chars]", one, false},           // a human's paste
		{"codex", "fix this [Pasted Content 5600 chars]", one, false}, // human words around it
		{"codex", "fix the flaky test", one, false},
		{"claude", "[Pasted text #1 +41 lines]", multi, true},
		{"claude", "[Pasted text #3]", one, true},
		{"claude", "[Pasted text #1 +3 lines]", multi, false},
		{"gemini", "[Pasted Text: 42 lines]", multi, true},
		{"gemini", "[Pasted Text: " + strconv.Itoa(n) + " chars]", one, true},
		{"opencode", "[Pasted ~42 lines]", multi, true},
		{"opencode", "[Pasted ~1 lines]", one, true},
		{"pi", "[paste #1 +42 lines]", multi, true},
		{"pi", "[paste #2 " + strconv.Itoa(n) + " chars]", one, true},
		{"shell", "[Pasted Content 10 chars]", one, false}, // no placeholders in a shell
		// An editor that shows only a part of the text (Pi: "↑ 74 more"), wrapped anywhere.
		{"pi", "of the prompt a line of the prompt a li", multi, true},
		{"pi", "word word wo rd word", one, true},
		{"pi", "fix the flaky test", one, false},
		{"pi", "word", one, false}, // too short to tell
	} {
		if got := packs[tt.pack].Ours(tt.composer, tt.typed); got != tt.want {
			t.Errorf("#%d %s %q: got %v, want %v", i, tt.pack, tt.composer, got, tt.want)
		}
	}
}

// TestHoldsAmongOthers: a composer that shows several prompts folded, one under the
// other (Gemini CLI took three pastes while busy), still holds each of them; and is
// nudge's own, not a human's draft, when every placeholder is one of nudge's texts.
func TestHoldsAmongOthers(t *testing.T) {
	gm := defaultPacks(t)["gemini"]
	a := strings.Repeat("line\n", 273) + "end" // 274 lines
	b := strings.Repeat("x", 65805)            // one long line
	c := strings.Repeat("row\n", 1077) + "end" // 1078 lines
	composer := "[Pasted Text: 274 lines] [Pasted Text: 65805 chars] [Pasted Text: 1078 lines]"
	for i, typed := range []string{a, b, c} {
		if !gm.Holds(composer, typed) {
			t.Errorf("#%d: Holds = false", i)
		}
	}
	if gm.Holds(composer, "a short one") {
		t.Error("Holds a prompt that is not there")
	}
	if !gm.OursAll(composer, []string{c, b, a, ""}) {
		t.Error("OursAll = false for three of nudge's prompts")
	}
	if gm.OursAll(composer, []string{c, b}) || gm.OursAll(composer+" and mine", []string{a, b, c}) {
		t.Error("OursAll = true with a paste or words that are not nudge's")
	}
}

// TestQueuedInAgent checks the recorded screens of a prompt queued in the agent.
func TestQueuedInAgent(t *testing.T) {
	packs := defaultPacks(t)
	for _, tt := range []struct {
		pack, file string
		want       bool
	}{
		{"claude", "claude_busy_queued.ansi", true},
		{"codex", "codex_busy_queued.ansi", true},
		{"claude", "claude_busy_retrying.ansi", false},
		{"codex", "codex_busy_reconnecting.ansi", false},
		{"codex", "codex_idle.ansi", false},
		{"claude", "claude_idle.ansi", false},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "screens", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := Classify(packs[tt.pack], string(data)); got.Queued != tt.want {
			t.Errorf("%s: Queued = %v, want %v", tt.file, got.Queued, tt.want)
		}
	}
}
