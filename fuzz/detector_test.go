package fuzz

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/acarl005/stripansi"
	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/detector"
)

// FuzzClassify checks, for every pack, that Classify never panics, returns a
// known state, and that a draft is printable text taken from the screen.
func FuzzClassify(f *testing.F) {
	corpus := []string{
		"$ ", "user@host:~$ make\n", "\x1b[2m› placeholder\x1b[0m", "│ > hi │",
		"Allow? (y/N)", "Traceback (most recent call last):\nValueError: x\n$",
		"\x1b[38;5;", "\x1b]0;title\x07$ ls", "› a\n  b\n  c", "\x1b[38;2;1;2;3m> x",
	}
	for _, s := range corpus {
		f.Add(s)
	}
	files, _ := filepath.Glob(filepath.Join("..", "detector", "testdata", "screens", "*.ansi"))
	for _, file := range files[:min(len(files), 4)] {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(string(data))
		}
	}
	packs, err := detector.LoadPacks("")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, screen string) {
		// What a terminal shows: escapes stripped, and control characters (BEL, …) gone,
		// as the classifier drops them (so "0\a00" reads "000").
		plain := strings.Map(func(r rune) rune {
			if unicode.IsControl(r) && r != '\n' && r != '\t' {
				return -1
			}
			return r
		}, stripansi.Strip(screen))
		for name, p := range packs {
			c := detector.Classify(p, screen)
			switch c.State {
			case nudge.Ready, nudge.Busy, nudge.NeedsConfirmation, nudge.ErrorState, nudge.Unknown:
			default:
				t.Fatalf("%s: state %q", name, c.State)
			}
			if !c.Confident && c.State != nudge.Unknown && c.State != nudge.Busy {
				t.Fatalf("%s: unsure %s", name, c.State)
			}
			for _, r := range c.Draft {
				if unicode.IsControl(r) {
					t.Fatalf("%s: control %U in draft %q", name, r, c.Draft)
				}
			}
			if c.Draft != "" && !strings.ContainsRune(screen, 0x1b) && utf8.ValidString(screen) {
				for _, w := range strings.Fields(c.Draft) {
					if !strings.Contains(plain, w) {
						t.Fatalf("%s: draft word %q not on screen %q", name, w, screen)
					}
				}
			}
		}
	})
}

// FuzzPackOurs: the folded-paste match never panics on any composer text, and the
// placeholder a CLI draws for exactly what was typed is always nudge's own.
func FuzzPackOurs(f *testing.F) {
	corpus := [][2]string{
		{"[Pasted Content 4096 chars][Pasted Content 1525 chars]", "x"},
		{"[Pasted text #1 +40 lines]", "a\nb"}, {"[paste #2 12 chars]", "hello world!"},
		{"[Pasted ~3 lines]", "a\nb\nc"}, {"[Pasted Text: 9 lines #2]", ""},
		{"[Pasted Content 99999999999999999999999 chars]", "y"},
	}
	for _, c := range corpus {
		f.Add(c[0], c[1])
	}
	packs, err := detector.LoadPacks("")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, composer, typed string) {
		for _, p := range packs {
			p.Ours(composer, typed)
		}
		if typed == "" || !utf8.ValidString(typed) {
			return
		}
		folded := fmt.Sprintf("[Pasted Content %d chars]", utf8.RuneCountInString(typed))
		if !packs["codex"].Ours(folded, typed) {
			t.Fatalf("codex: %q is not the fold of %q", folded, typed)
		}
	})
}

// FuzzParsePack: any pack file is parsed or refused with an error, never a panic; a
// parsed one classifies any screen.
func FuzzParsePack(f *testing.F) {
	for _, s := range []string{
		`{"composer":{"prompt":"^> ?","folded":["\\[x (?P<chars>\\d+)\\]"]},"busy":["a",{"re":"b","where":"above_composer","within":2}]}`,
		`{"busy":[{"re":"x","where":"below_composer","style":"fg:31"}],"turn_done":["^done"],"queued":["q"]}`,
		`{"busy":[{"re":"(","where":"left"}]}`, `{"busy":[1]}`,
	} {
		f.Add(s, "> hi\nfooter")
	}
	f.Fuzz(func(t *testing.T, pack, screen string) {
		p, err := detector.ParsePack("f", []byte(pack))
		if err != nil {
			return
		}
		detector.Classify(p, screen)
	})
}

// FuzzParseDialog: any styled screen, read with each pack that knows a dialog, never
// panics; a dialog read has options, its id is 12 hex digits, its command is made of
// lines of its text, it is no dialog once an option line is drawn below it (it is not
// the live one at the bottom), and a row of buttons (OpenCode's) has keys only of Right
// and Enter, ending in one Enter, all distinct.
func FuzzParseDialog(f *testing.F) {
	packs, err := detector.LoadPacks("")
	if err != nil {
		f.Fatal(err)
	}
	f.Add("┃  △ Permission required\n┃    # Shell command\n┃  $ ls\n┃   \x1b[48;5;215m Allow once \x1b[48;5;234m  Allow always   Reject  ")
	f.Add("△ Permission required\n\x1b[7mAllow once\x1b[27m Allow always Reject\x1b]0;t\x07")
	f.Add("Do you want to proceed?\n❯ 1. Yes\n  2. No (esc)")
	f.Add(" Bash command\n   ls\n   \x1b[38;5;246mList\x1b[39m\n Do you want to proceed?\n ❯ 1. Yes\n   2. No\n\n Esc to cancel")
	f.Add("  Would you like to run the following command?\n  Reason: $ ls\n  $ rm -rf x\n› 1. Yes, proceed (y)\n  2. No (esc)\n  Press enter to confirm or esc to cancel")
	f.Fuzz(func(t *testing.T, screen string) {
		for name, p := range packs {
			d := detector.ParseDialog(p, screen)
			if d == nil {
				continue
			}
			if len(d.Options) == 0 || len(d.DialogID) != 12 {
				t.Fatalf("%s: %+v", name, d)
			}
			for _, l := range strings.Split(d.Command, "\n") {
				if l != "" && !strings.Contains(d.Text, l) {
					t.Fatalf("%s: command line %q is not in the dialog's text %q", name, l, d.Text)
				}
			}
			if p.Dialog.Keys != "arrows" {
				if below := detector.ParseDialog(p, strings.TrimRight(screen, "\n")+"\n\n 9. x"); below != nil {
					t.Fatalf("%s: an option line below the dialog, still read: %+v", name, below)
				}
				continue
			}
			seen := map[string]bool{}
			for _, o := range d.Options {
				if o.Key == "" {
					continue
				}
				ks := strings.Fields(o.Key)
				for i, k := range ks {
					if (i < len(ks)-1 && k != "Right") || (i == len(ks)-1 && k != "Enter") {
						t.Fatalf("%s: option %+v", name, o)
					}
				}
				if seen[o.Key] {
					t.Fatalf("%s: two options with keys %q", name, o.Key)
				}
				seen[o.Key] = true
			}
		}
	})
}
