package inject

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nudgehq/nudge"
)

// DefaultMaxPromptBytes is the size limit Sanitize applies when maxBytes <= 0.
const DefaultMaxPromptBytes = 64 << 10

// ackWord is the ack marker's word. A prompt containing it in any ASCII case is
// rejected: typed into a pane, it could forge an ack (ACK_TRIGGER:<id>), also when a
// TUI redraws the prompt with cursor moves between the word and what follows it.
const ackWord = "ACK_TRIGGER"

// Sanitize returns prompt as safe text to type into a pane:
//
//   - invalid UTF-8 bytes become U+FFFD;
//   - CRLF and a lone CR become LF; a tab becomes one space;
//   - every other C0 control, DEL, the C1 controls U+0080–U+009F and the bidi
//     override/isolate controls U+202A–U+202E, U+2066–U+2069 are removed;
//   - trailing white space (unicode.IsSpace) is trimmed.
//
// It fails with a *nudge.Error of code nudge.PayloadRejected when the result is
// empty, longer than maxBytes (DefaultMaxPromptBytes when maxBytes <= 0; measured
// after sanitizing), or contains the ack marker word ACK_TRIGGER in any ASCII case
// (a stricter rule than the marker ACK_TRIGGER: itself). Sanitize is idempotent on
// its results. A prompt that is already clean is returned without copying.
func Sanitize(prompt string, maxBytes int) (string, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxPromptBytes
	}
	s := prompt
	if !isClean(s) {
		s = clean(s)
	}
	switch {
	case s == "":
		return "", nudge.NewError(nudge.PayloadRejected, "prompt is empty after sanitizing")
	case len(s) > maxBytes:
		return "", nudge.NewError(nudge.PayloadRejected, "prompt exceeds the size limit")
	case containsFold(s, ackWord):
		return "", nudge.NewError(nudge.PayloadRejected, "prompt contains the ack marker "+ackWord)
	}
	return s, nil
}

// isClean reports whether s is printable ASCII and LF only, with no trailing space
// or LF, so that clean would return it unchanged.
func isClean(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n') || c >= 0x7f {
			return false
		}
	}
	return s == "" || (s[len(s)-1] != ' ' && s[len(s)-1] != '\n')
}

// clean applies Sanitize's rewriting rules to s.
func clean(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '\r':
			if i < len(s) && s[i] == '\n' {
				i++
			}
			b.WriteByte('\n')
		case r == '\t':
			b.WriteByte(' ')
		case r == '\n' || !dropRune(r):
			b.WriteRune(r) // r == RuneError for invalid bytes: written as U+FFFD
		}
	}
	return strings.TrimRightFunc(b.String(), unicode.IsSpace)
}

// dropRune reports whether r is a control character Sanitize removes.
func dropRune(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// containsFold reports whether s contains word (upper-case ASCII) in any ASCII case.
func containsFold(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		j := 0
		for j < len(word) && upperASCII(s[i+j]) == word[j] {
			j++
		}
		if j == len(word) {
			return true
		}
	}
	return false
}

func upperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}
