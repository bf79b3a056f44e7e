package inject

import (
	"strings"

	"github.com/nudgehq/nudge/controlmode"
)

// DefaultBuffer is the paste buffer name TypeCommands uses when bufName is "".
const DefaultBuffer = "nudge"

// MaxKeys is the longest one-line text TypeCommands types as keys; longer text is pasted.
// A TUI takes many keys slowly, one redraw per key, worse than linearly (Pi needed more
// than the submit timeout for 64 KiB; Gemini CLI took 1.5 s for a 1 KB line, 33 s for
// 2 KB and had not shown 4 KB after a minute), and guesses at a paste from a fast burst
// of keys, folding it in pieces (Codex showed a 5.6 KB prompt as [Pasted Content 4096
// chars][Pasted Content 1525 chars]); one bracketed paste is taken at once, as one paste.
// Codex also took 1.2 KB of keys as a paste burst that swallowed the Enter after it (the
// text stayed in a composer taller than the screen, never submitted); a bracketed paste
// is folded into [Pasted Content N chars] and the Enter submits it.
const MaxKeys = 512

// NeedsPaste reports whether TypeCommands pastes text (rather than typing it as keys).
func NeedsPaste(text string) bool {
	return len(text) > MaxKeys || strings.IndexAny(text, "\n\r") >= 0
}

// TypeCommands returns the tmux control-mode command lines that put text into the
// pane target as one message, without Enter, if the pane is still the one expected: alive
// and, if pid is not 0, running that pid (controlmode.IfPane; otherwise the reply is a
// *controlmode.PaneGoneError and nothing is typed). Each element is one command line
// (no ';' chaining, no LF, CR or NUL inside); send them in order, e.g. with one
// pipelined write.
//
// Text without LF or CR, at most MaxKeys bytes, is typed with send-keys -l. Other text
// (several lines, or one long line) goes through the paste
// buffer bufName (DefaultBuffer if ""), set in one set-buffer and pasted with
// paste-buffer -d -p -r: the app gets one bracketed paste if it enabled bracketed
// paste, and LF stays LF (-r). When the guard refuses the paste the buffer stays (delete
// it). Concurrent deliveries should use distinct buffer names.
// Empty text gives no commands. Text must be valid UTF-8 without NUL (Sanitize's
// output is); anything else is refused with controlmode.ErrUnquotable.
func TypeCommands(target string, pid int, text, bufName string) ([]string, error) {
	return TypeCommandsInto(target, pid, true, text, bufName)
}

// TypeCommandsInto is TypeCommands for a pane whose foreground program must not be a
// shell unless shellOK (controlmode.IfAgent): the guard then also refuses a pane whose
// agent exited back to the shell it was started from, where the text would run as
// commands.
func TypeCommandsInto(target string, pid int, shellOK bool, text, bufName string) ([]string, error) {
	guard := controlmode.IfAgent
	if shellOK {
		guard = controlmode.IfPane
	}
	if text == "" {
		return nil, nil
	}
	t, err := controlmode.Quote(target)
	if err != nil {
		return nil, err
	}
	if !NeedsPaste(text) {
		q, err := controlmode.Quote(text)
		if err != nil {
			return nil, err
		}
		line, err := guard(target, pid, "send-keys -t "+t+" -l -- "+q)
		if err != nil {
			return nil, err
		}
		return []string{line}, nil
	}
	if bufName == "" {
		bufName = DefaultBuffer
	}
	buf, err := controlmode.Quote(bufName)
	if err != nil {
		return nil, err
	}
	q, err := controlmode.QuoteText(text)
	if err != nil {
		return nil, err
	}
	// tmux 3.3a crashes pasting into a pane whose program has exited: the guard matters
	// twice here.
	paste, err := guard(target, pid, "paste-buffer -b "+buf+" -d -p -r -t "+t)
	if err != nil {
		return nil, err
	}
	return []string{"set-buffer -b " + buf + " -- " + q, paste}, nil
}

// EnterCommand returns the command line that presses Enter in target, guarded as
// TypeCommands' lines are: a raw CR, unaffected by key-table and extended-keys encoding.
func EnterCommand(target string, pid int) (string, error) {
	return EnterCommandInto(target, pid, true)
}

// EnterCommandInto is EnterCommand guarded as TypeCommandsInto's lines are.
func EnterCommandInto(target string, pid int, shellOK bool) (string, error) {
	if !shellOK {
		return controlmode.IfAgent(target, pid, "send-keys -t "+quote(target)+" -H 0d")
	}
	return controlmode.IfPane(target, pid, "send-keys -t "+quote(target)+" -H 0d")
}

// quote quotes a pane target or id (never holds a line break).
func quote(s string) string {
	q, err := controlmode.Quote(s)
	if err != nil {
		return "''"
	}
	return q
}
