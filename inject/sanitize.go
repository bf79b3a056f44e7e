package inject

import (
	"strconv"
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

// envelopeWord is the envelope's word ([BRIDGE_TRIGGER id=…], [/BRIDGE_TRIGGER]). A prompt
// containing it in any ASCII case is rejected: inside the body of a typed envelope, a
// line "[BRIDGE_TRIGGER id=<another trigger's id> …" would be read back from the agent's
// record as that trigger's prompt (its ack, its reply), and a "[/BRIDGE_TRIGGER]" would end
// the echo early on the screen, where the ack marker is looked for.
const envelopeWord = "BRIDGE_TRIGGER"

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
// after sanitizing), or contains the ack marker word ACK_TRIGGER or the envelope word
// BRIDGE_TRIGGER in any ASCII case (stricter rules than the marker ACK_TRIGGER: and the
// envelope's head and foot themselves). Sanitize is idempotent on
// its results. A prompt that is already clean is returned without copying.
func Sanitize(prompt string, maxBytes int) (string, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxPromptBytes
	}
	s := prompt
	if i := firstUnclean(s); i >= 0 {
		s = clean(s, i)
	}
	switch {
	case s == "":
		return "", nudge.NewError(nudge.PayloadRejected, "prompt is empty after sanitizing")
	case len(s) > maxBytes:
		return "", nudge.NewError(nudge.PayloadRejected, "prompt exceeds the size limit ("+strconv.Itoa(len(s))+" bytes, at most "+strconv.Itoa(maxBytes)+
			"): shorten it, or put the text in a file in the workspace and ask the agent to read it")
	case containsFold(s, ackWord):
		return "", nudge.NewError(nudge.PayloadRejected, "prompt contains the ack marker "+ackWord+
			" (the agent prints it to acknowledge a trigger; reword the prompt without it)")
	case containsFold(s, envelopeWord):
		return "", nudge.NewError(nudge.PayloadRejected, "prompt contains the envelope word "+envelopeWord+
			" (nudge wraps every prompt in its own envelope; a prompt may not hold one: reword it without the word)")
	}
	return s, nil
}

// firstUnclean returns the index of the first byte clean would look at (anything
// but printable ASCII and LF), len(s) if s ends in a space or LF, or -1 if clean
// would return s unchanged.
func firstUnclean(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n') || c >= 0x7f {
			return i
		}
	}
	if s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\n') {
		return len(s)
	}
	return -1
}

// clean applies Sanitize's rewriting rules to s, copying unchanged runs whole;
// s[:from] is known to be printable ASCII and LF.
func clean(s string, from int) string {
	b := make([]byte, 0, len(s))
	run := 0 // start of the pending unchanged run
	for i := from; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f || c == '\n' {
			i++
			continue
		}
		r, n := rune(c), 1
		if c >= 0x80 {
			r, n = utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError && !dropRune(r) {
				i += n
				continue
			}
		}
		b = append(b, s[run:i]...)
		i += n
		b = appendReplacement(b, r, s[i:])
		if r == '\r' && i < len(s) && s[i] == '\n' {
			i++
		}
		run = i
	}
	b = append(b, s[run:]...)
	return strings.TrimRightFunc(string(b), unicode.IsSpace)
}

// appendReplacement appends what the special rune r becomes: LF for CR, a space
// for a tab, U+FFFD for an invalid byte (r == RuneError), nothing for a control.
func appendReplacement(b []byte, r rune, rest string) []byte {
	switch {
	case r == '\r':
		return append(b, '\n')
	case r == '\t':
		return append(b, ' ')
	case r == utf8.RuneError:
		return utf8.AppendRune(b, r)
	}
	return b
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
