package detector

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/acarl005/stripansi"
	"github.com/nudgehq/nudge"
)

type expectation struct {
	Pack    string          `json:"pack"`
	State   nudge.Readiness `json:"state"`
	Draft   string          `json:"draft"`
	CursorY *int            `json:"cursor_y"`
	Unsure  bool            `json:"unsure"` // Confident must be false
}

func defaultPacks(t testing.TB) map[string]*Pack {
	t.Helper()
	packs, err := LoadPacks("")
	if err != nil {
		t.Fatalf("LoadPacks: %v", err)
	}
	return packs
}

func loadExpected(t *testing.T) map[string]expectation {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "screens", "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp map[string]expectation
	if err := json.Unmarshal(data, &exp); err != nil {
		t.Fatal(err)
	}
	return exp
}

// TestRecordedScreens classifies every capture under testdata/screens (both
// the -e capture "*.ansi" and the plain "*.txt" one) and checks it against
// expected.json; every screen file must have an expectation.
func TestRecordedScreens(t *testing.T) {
	packs := defaultPacks(t)
	exp := loadExpected(t)
	files, _ := filepath.Glob(filepath.Join("testdata", "screens", "*"))
	sort.Strings(files)
	seen := map[string]bool{}
	for _, f := range files {
		ext := filepath.Ext(f)
		if ext != ".ansi" && ext != ".txt" {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(f), ext)
		seen[name] = true
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, ok := exp[name]
			if !ok {
				t.Fatalf("no expectation for %s in expected.json", name)
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			s := Screen{Text: string(data), CursorY: -1}
			if want.CursorY != nil {
				s.CursorY = *want.CursorY
			}
			got := ClassifyScreen(packs[want.Pack], s)
			if got.State != want.State || got.Draft != want.Draft {
				t.Errorf("got %s draft %q (%q), want %s draft %q", got.State, got.Draft, got.Summary, want.State, want.Draft)
			}
			if got.Confident == want.Unsure {
				t.Errorf("Confident = %v, want %v (%q)", got.Confident, !want.Unsure, got.Summary)
			}
		})
	}
	for name := range exp {
		if !seen[name] {
			t.Errorf("expected.json names %s but no screen file exists", name)
		}
	}
}

// TestParseScreenMatchesStripansi checks that the attribute-aware parser sees
// the same text as stripansi on every recorded -e capture.
func TestParseScreenMatchesStripansi(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "screens", "*.ansi"))
	if len(files) == 0 {
		t.Fatal("no .ansi screens")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Split(strings.TrimRight(stripansi.Strip(string(data)), "\n"), "\n")
		got := parseScreen(string(data))
		for i := range want {
			w := strings.TrimRight(want[i], " ")
			g := ""
			if i < len(got) {
				g = got[i].plain
			}
			if g != w {
				t.Errorf("%s line %d: got %q, want %q", filepath.Base(f), i, g, w)
			}
		}
	}
}

// TestCursorDecidesShellDraft shows why the cursor row matters for shells:
// the same text is a draft at the prompt, or a running command.
func TestCursorDecidesShellDraft(t *testing.T) {
	sh := defaultPacks(t)["shell"]
	text := "$ ls\nfile\n$ sleep 30\n\n\n"
	c := ClassifyScreen(sh, Screen{Text: text, CursorY: 2})
	if c.State != nudge.Ready || c.Draft != "sleep 30" {
		t.Errorf("cursor on prompt: got %s %q, want READY %q", c.State, c.Draft, "sleep 30")
	}
	c = ClassifyScreen(sh, Screen{Text: text, CursorY: 3})
	if c.State != nudge.Busy || c.Draft != "" || c.Confident {
		t.Errorf("cursor below: got %s %q confident=%v, want BUSY, no draft, unsure", c.State, c.Draft, c.Confident)
	}
}

func TestClassifyRules(t *testing.T) {
	packs := defaultPacks(t)
	tests := []struct {
		pack, screen string
		want         nudge.Readiness
		draft        string
	}{
		// confirmation at the bottom beats an error above it
		{"shell", "Traceback (most recent call last):\nValueError: x\nOverwrite config? (y/N)", nudge.NeedsConfirmation, ""},
		// an answered confirmation above a fresh prompt is history
		{"shell", "Overwrite config? (y/N) y\ndone\n$", nudge.Ready, ""},
		// panic at the bottom with no prompt
		{"shell", "$ ./server\nlistening\npanic: runtime error: index out of range", nudge.ErrorState, ""},
		{"shell", "", nudge.Unknown, ""},
		{"shell", "root@box:/# ", nudge.Ready, ""},
		{"shell", "host% make", nudge.Ready, "make"},
		{"shell", "$ echo a > b", nudge.Ready, "echo a > b"},
		// Codex: an error older than a later history entry is not ERROR
		{"codex", "■ unexpected status 500\n• retried and done\n\n› Ask Codex to do anything", nudge.Ready, ""},
		{"codex", "› go\n■ Conversation interrupted - use /feedback\n\n› Ask Codex to do anything", nudge.Ready, ""},
		{"codex", "• Working (3s • esc to interrupt)\n\n› half typed", nudge.Busy, "half typed"},
		// a multi-line draft in the Codex composer
		{"codex", "› first line of a long\n  draft that wraps\n\n  gpt default · ~/src", nudge.Ready, "first line of a long draft that wraps"},
		// the bypass-permissions banner alone is not READY
		{"claude", "⏵⏵ bypass permissions on (shift+tab to cycle)", nudge.Unknown, ""},
	}
	for i, tt := range tests {
		got := Classify(packs[tt.pack], tt.screen)
		if got.State != tt.want || got.Draft != tt.draft {
			t.Errorf("#%d (%s): got %s %q (%q), want %s %q", i, tt.pack, got.State, got.Draft, got.Summary, tt.want, tt.draft)
		}
	}
}

// TestPlaceholderByStyle: the same words are placeholder when dim and a
// draft when typed normally.
func TestPlaceholderByStyle(t *testing.T) {
	cx := defaultPacks(t)["codex"]
	dim := "\x1b[1m›\x1b[0m \x1b[2mrefactor the parser\x1b[0m\n"
	if c := Classify(cx, dim); c.Draft != "" || c.State != nudge.Ready {
		t.Errorf("dim: got %s %q, want READY no draft", c.State, c.Draft)
	}
	typed := "\x1b[1m›\x1b[0m refactor the parser\n"
	if c := Classify(cx, typed); c.Draft != "refactor the parser" {
		t.Errorf("typed: got draft %q", c.Draft)
	}
	mixed := "\x1b[1m›\x1b[0m fix\x1b[2m the placeholder tail\x1b[0m\n"
	if c := Classify(cx, mixed); c.Draft != "fix" {
		t.Errorf("mixed: got draft %q, want %q", c.Draft, "fix")
	}
}
