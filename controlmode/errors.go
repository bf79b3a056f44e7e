package controlmode

import (
	"errors"
	"fmt"
	"strings"
)

// Errors callers branch on with errors.Is.
var (
	// ErrClosed is Err() after Close, and the error of commands issued after it.
	ErrClosed = errors.New("controlmode: connection closed")
	// ErrUnquotable reports a string holding \n, \r, NUL or invalid UTF-8, which no tmux
	// command line can carry inside quotes; send those bytes with SendKeys (send-keys -H).
	ErrUnquotable = errors.New("controlmode: string contains newline, carriage return, NUL or invalid UTF-8")
	// ErrUnsafeCommand reports a command line that would not yield exactly one reply block
	// (blank, a comment, a %directive, chained with ';', a {} block, if-shell or source-file,
	// or a line holding \n, \r, NUL or invalid UTF-8). Quote arguments with Quote.
	ErrUnsafeCommand = errors.New("controlmode: unsafe command line")
	// ErrNoSession reports that the session (or the whole tmux server) does not exist.
	ErrNoSession = errors.New("controlmode: no such session")
	// ErrLineTooLong is returned by Reader.ReadLine for a line over the cap; the line has
	// been skipped and the next call reads the following line.
	ErrLineTooLong = errors.New("controlmode: line too long")
	// ErrProtocol reports a line that breaks the control-mode grammar; see ProtocolError.
	ErrProtocol = errors.New("controlmode: protocol error")
)

// ProtocolError is a line from tmux that could not be parsed. It matches ErrProtocol.
type ProtocolError struct {
	Line   string
	Reason string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("controlmode: %s: %q", e.Reason, e.Line)
}

// Is reports whether target is ErrProtocol.
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }

// CommandError is a command answered with %error. Lines is the block's body, usually one
// message such as "can't find pane: %9" or "parse error: …".
type CommandError struct {
	Cmd   string
	Lines []string
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("tmux %q: %s", e.Cmd, strings.Join(e.Lines, "; "))
}

// ExitError is Err() of a connection that tmux ended with "%exit [reason]": a bare %exit
// after detach or kill-server, "too far behind" for a reader that fell behind, "server
// exited unexpectedly" for a server that died.
type ExitError struct {
	Reason string
}

func (e *ExitError) Error() string {
	if e.Reason == "" {
		return "tmux control client exited"
	}
	return "tmux control client exited: " + e.Reason
}
