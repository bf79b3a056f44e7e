package inject

import "strings"

// DefaultBuffer is the paste buffer name TypeCommands uses when bufName is "".
const DefaultBuffer = "nudge"

// TypeCommands returns the tmux control-mode command lines that put text into the
// pane target as one message, without Enter. Each element is one command line
// (no ';' chaining, no LF, CR or NUL inside); send them in order, e.g. with one
// pipelined write.
//
// Text without LF, CR or NUL is typed with send-keys -l. Other text goes through
// the paste buffer bufName (DefaultBuffer if ""), set in one set-buffer and pasted
// with paste-buffer -d -p -r: the app gets one bracketed paste if it enabled
// bracketed paste, and LF stays LF (-r). NUL bytes cannot be carried by a paste
// buffer and are dropped; Sanitize output has none. Concurrent deliveries should
// use distinct buffer names. Empty text gives no commands.
func TypeCommands(target, text, bufName string) []string {
	if text == "" {
		return nil
	}
	t := quote(target)
	if strings.IndexAny(text, "\n\r\x00") < 0 {
		return []string{"send-keys -t " + t + " -l -- " + quote(text)}
	}
	if bufName == "" {
		bufName = DefaultBuffer
	}
	buf := quote(bufName)
	return []string{
		"set-buffer -b " + buf + " -- " + quoteLines(text),
		"paste-buffer -b " + buf + " -d -p -r -t " + t,
	}
}

// EnterCommand returns the command line that presses Enter in target: a raw CR,
// unaffected by key-table and extended-keys encoding.
func EnterCommand(target string) string {
	return "send-keys -t " + quote(target) + " -H 0d"
}

// quote returns s as one tmux argument in single quotes, each single quote
// written as the four bytes quote, backslash, quote, quote (as in POSIX sh).
// Inside single quotes the tmux parser interprets nothing. s must not hold LF, CR
// or NUL (quoteLines handles those).
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	writeQuoted(&b, s)
	return b.String()
}

func writeQuoted(b *strings.Builder, s string) {
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
}

// quoteLines returns s as one tmux argument: runs single-quoted, LF and CR as the
// double-quoted escapes "\n" and "\r" joined to them in the same token, NUL dropped.
func quoteLines(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/8 + 8)
	for {
		i := strings.IndexAny(s, "\n\r\x00")
		if i < 0 {
			break
		}
		writeQuoted(&b, s[:i])
		switch s[i] {
		case '\n':
			b.WriteString(`"\n"`)
		case '\r':
			b.WriteString(`"\r"`)
		}
		s = s[i+1:]
	}
	writeQuoted(&b, s)
	return b.String()
}
