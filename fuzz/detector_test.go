package fuzz

import (
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
