package fuzz

import (
	"strings"
	"testing"
	"unicode"

	"github.com/nudgehq/nudge/cmd/nudge/notify"
	"github.com/nudgehq/nudge/controlmode"
)

// FuzzNotifyLiteral: whatever an agent's summary holds, the display-message text nudge
// builds from it is one quotable tmux argument, holds no control character, and every '#'
// in it is doubled (so tmux expands no format and runs no #() command).
func FuzzNotifyLiteral(f *testing.F) {
	corpus := []string{
		"plain",
		"#(touch /tmp/x) #{pane_id} ##",          // formats and a shell command
		"line\nbreak\r\x1b[31mred\x00nul",        // control characters
		"'quoted' \"double\" ; {brace} \\ $HOME", // tmux's lexer's specials
		"\xff\xfe invalid utf-8 \xc3",            // not UTF-8
		strings.Repeat("#", 300),                 // long, all hashes
	}
	for _, s := range corpus {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lit := notify.Literal(s)
		if _, err := controlmode.Quote(lit); err != nil {
			t.Fatalf("Literal(%q) = %q: not quotable: %v", s, lit, err)
		}
		for _, r := range lit {
			if unicode.IsControl(r) {
				t.Fatalf("Literal(%q) = %q holds control character %U", s, lit, r)
			}
		}
		for _, run := range strings.FieldsFunc(lit, func(r rune) bool { return r != '#' }) {
			if len(run)%2 != 0 {
				t.Fatalf("Literal(%q) = %q: a '#' run of odd length", s, lit)
			}
		}
		if strings.Contains(strings.ReplaceAll(lit, "##", ""), "#") {
			t.Fatalf("Literal(%q) = %q: a single '#'", s, lit)
		}
	})
}
