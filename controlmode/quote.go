package controlmode

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Quote returns s as one tmux command argument: wrapped in single quotes, inside which
// tmux interprets nothing, with each ' written as '\”. The result is one token whatever s
// holds (;, {}, #{…}, $VAR, ~, \, %if). It fails with ErrUnquotable if s holds \n, \r or
// NUL, which cannot appear in a command line, or is not valid UTF-8 (tmux 3.3a's lexer
// reads a partial UTF-8 sequence past the closing quote); type those with SendKeys.
func Quote(s string) (string, error) {
	if strings.ContainsAny(s, "\n\r\x00") || !utf8.ValidString(s) {
		return "", fmt.Errorf("quote %q: %w", s, ErrUnquotable)
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for {
		i := strings.IndexByte(s, '\'')
		if i < 0 {
			break
		}
		b.WriteString(s[:i])
		b.WriteString(`'\''`)
		s = s[i+1:]
	}
	b.WriteString(s)
	b.WriteByte('\'')
	return b.String(), nil
}

// QuoteText returns text as one tmux command argument even when it holds line breaks:
// runs single-quoted as Quote does, each \n and \r written as the double-quoted escape
// "\n" or "\r" joined to them in the same token (tmux joins adjacent quoted parts). It
// fails with ErrUnquotable on NUL or invalid UTF-8. set-buffer takes it; send-keys -l
// does not need it (use SendKeys).
func QuoteText(text string) (string, error) {
	if strings.IndexByte(text, 0) >= 0 || !utf8.ValidString(text) {
		return "", fmt.Errorf("quote text: %w", ErrUnquotable)
	}
	var b strings.Builder
	b.Grow(len(text) + len(text)/8 + 8)
	for {
		i := strings.IndexAny(text, "\n\r")
		if i < 0 {
			break
		}
		q, _ := Quote(text[:i])
		b.WriteString(q)
		if text[i] == '\n' {
			b.WriteString(`"\n"`)
		} else {
			b.WriteString(`"\r"`)
		}
		text = text[i+1:]
	}
	q, _ := Quote(text)
	b.WriteString(q)
	return b.String(), nil
}

// SendKeys returns the command lines that make tmux type text into target byte-exact:
// `send-keys -t T -l -- '<run>'` for runs of valid UTF-8 that Quote can carry and
// `send-keys -t T -H 0a 0d …` (hex) for \n, \r, NUL and bytes that are not valid UTF-8.
// Empty text gives no lines. It returns nil if target itself cannot be quoted. Send the
// lines in order, e.g. with DoAll; each yields exactly one reply.
func SendKeys(target, text string) []string {
	qt, err := Quote(target)
	if err != nil {
		return nil
	}
	var lines []string
	for len(text) > 0 {
		n := literalRun(text)
		if n > 0 {
			q, _ := Quote(text[:n])
			lines = append(lines, "send-keys -t "+qt+" -l -- "+q)
			text = text[n:]
			continue
		}
		var b strings.Builder
		b.WriteString("send-keys -t " + qt + " -H")
		for len(text) > 0 && literalRun(text) == 0 {
			fmt.Fprintf(&b, " %02x", text[0])
			text = text[1:]
		}
		lines = append(lines, b.String())
	}
	return lines
}

// literalRun returns the length of the prefix of s that send-keys -l can carry: valid
// UTF-8 with no \n, \r or NUL.
func literalRun(s string) int {
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '\n' || c == '\r' || c == 0 {
			return i
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return i
}

// checkCommand reports whether line is safe to send as one command yielding exactly one
// reply block. It rejects what would give zero blocks (blank, comment), several blocks
// (';' outside quotes, {} blocks, commands that queue commands) or no guarantee at all
// (%directives, \n, \r, NUL).
func checkCommand(line string) error {
	if reason := unsafeReason(line); reason != "" {
		return fmt.Errorf("%w: %s: %q", ErrUnsafeCommand, reason, line)
	}
	return nil
}

func unsafeReason(line string) string {
	if strings.ContainsAny(line, "\n\r\x00") {
		return "newline, carriage return or NUL"
	}
	if !utf8.ValidString(line) {
		return "invalid UTF-8"
	}
	trimmed := strings.TrimLeft(line, " \t")
	switch {
	case trimmed == "":
		return "blank line"
	case trimmed[0] == '#':
		return "comment"
	case trimmed[0] == '%':
		return "directive"
	}
	if queuesCommands(firstWord(trimmed)) {
		return "command runs further commands"
	}
	return scanUnquoted(trimmed)
}

// scanUnquoted looks for ';', '{' and '}' outside quotes.
func scanUnquoted(s string) string {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case quote == '"':
			if c == '\\' {
				i++
			} else if c == '"' {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == ';':
			return "';' outside quotes"
		case c == '{' || c == '}':
			return "brace outside quotes"
		case c == '\\':
			if i+1 < len(s) && s[i+1] == ';' {
				return "';' outside quotes"
			}
			i++
		}
	}
	return ""
}

func firstWord(s string) string {
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i]
	}
	return s
}

// queuesCommands reports whether w names (or abbreviates) a command that inserts further
// commands into this client's queue, each with its own flags-1 block: if-shell, source-file.
func queuesCommands(w string) bool {
	if len(w) < 2 {
		return false
	}
	return w == "if" || w == "source" || strings.HasPrefix("if-shell", w) ||
		strings.HasPrefix("source-file", w)
}
