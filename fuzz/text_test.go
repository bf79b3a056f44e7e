package fuzz

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nudgehq/nudge"
)

// textCorpus seeds FuzzCleanText: what a pane capture can hold.
var textCorpus = []string{
	"plain text, nothing to do",                                 // unchanged
	"\x1b[1;31mred\x1b[0m \x1b[10;5Hmoved\r\n",                  // SGR, cursor motion, CR
	"\x1b]0;title\x07after \x1b]8;;u\x1b\\link",                 // OSC strings
	"c1 \u009b31m \u0085 del\x7f nul\x00",                       // C1 runes, DEL, NUL
	"export OPENAI_API_KEY=sk-proj-abcdefghijklmnop1234567890",  // a provider key
	"Authorization: Bearer abc.def \x1b[2mtoken=hunter2\x1b[0m", // secrets inside styling
	"https://bob:hunter2@example.com \xff\x9b invalid utf-8",    // URL credentials, bad bytes
	"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n(cut)",              // an unterminated PEM block
}

// FuzzCleanText checks the project's one stripper and one redactor, as a pane capture
// goes through them before it leaves the daemon (nudge.Redact(nudge.StripANSI(s))):
// no control character but tab and newline survives stripping, stripping is idempotent,
// and a provider key planted between any two texts never survives redaction.
func FuzzCleanText(f *testing.F) {
	for _, s := range textCorpus {
		f.Add(s, "tail")
	}
	const secret = "sk-FUZZabcdefghijklmnopqrstuv"
	f.Fuzz(func(t *testing.T, before, after string) {
		plain := nudge.StripANSI(before)
		for i, r := range plain {
			if r != '\n' && r != '\t' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0)) {
				t.Fatalf("StripANSI(%q) kept control %U at %d: %q", before, r, i, plain)
			}
		}
		if again := nudge.StripANSI(plain); again != plain {
			t.Fatalf("StripANSI not idempotent on %q: %q then %q", before, plain, again)
		}
		if utf8.ValidString(before) && !utf8.ValidString(plain) {
			t.Fatalf("StripANSI(%q) made invalid UTF-8: %q", before, plain)
		}
		in := before + " " + secret + " " + after
		if out := nudge.Redact(nudge.StripANSI(in)); strings.Contains(out, secret) {
			t.Fatalf("the key survived in %q", out)
		}
	})
}
