package controlmode

import (
	"errors"
	"strings"
)

// ErrPaneDead is the error of a command sent with IfAlive when the pane's program had
// already exited: the command did not run.
var ErrPaneDead = errors.New("controlmode: pane is dead")

// deadLine is what the dead branch of an IfAlive line prints.
const deadLine = "nudge:pane-dead"

// ifAlivePrefix and ifAliveMiddle frame the two quoted arguments of an IfAlive line.
const (
	ifAlivePrefix = "if-shell -F -t "
	ifAliveMiddle = " '#{pane_dead}' 'display-message -p " + deadLine + "' "
)

// IfAlive returns a command line that runs cmd (one command line, as Go takes) only if
// the program in pane target is still alive, decided in the same server step that runs
// cmd, so no exit can slip in between. Send it with Go, Do or DoAll like any other line:
// its reply is cmd's reply, or ErrPaneDead if the pane had died.
//
// tmux 3.3a dereferences a freed pane event when paste-buffer writes to a pane whose
// program has exited under remain-on-exit, and the whole server crashes; a check sent
// before the paste leaves a window for the exit. tmux runs `if-shell -F`'s branch right
// after it, before reading the pane again, so the guard closes that window. The line
// yields two reply blocks (if-shell's, then the branch's); the connection matches both.
func IfAlive(target, cmd string) (string, error) {
	if err := checkCommand(cmd); err != nil {
		return "", err
	}
	t, err := Quote(target)
	if err != nil {
		return "", err
	}
	q, err := Quote(cmd)
	if err != nil {
		return "", err
	}
	return ifAlivePrefix + t + ifAliveMiddle + q, nil
}

// parseIfAlive reports whether line is exactly what IfAlive builds (for a command that
// checkCommand accepts) and returns that command.
func parseIfAlive(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, ifAlivePrefix)
	if !ok {
		return "", false
	}
	target, rest, ok := unquote(rest)
	if !ok || target == "" {
		return "", false
	}
	rest, ok = strings.CutPrefix(rest, ifAliveMiddle)
	if !ok {
		return "", false
	}
	cmd, rest, ok := unquote(rest)
	if !ok || rest != "" || checkCommand(cmd) != nil {
		return "", false
	}
	return cmd, true
}

// unquote reads one token in Quote's form ('…' runs joined by \') from the start of s
// and returns its value and the rest of s.
func unquote(s string) (string, string, bool) {
	var b strings.Builder
	if !strings.HasPrefix(s, "'") {
		return "", s, false
	}
	for {
		switch {
		case strings.HasPrefix(s, "'"):
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return "", s, false
			}
			b.WriteString(s[1 : 1+end])
			s = s[end+2:]
		case strings.HasPrefix(s, `\'`):
			b.WriteByte('\'')
			s = s[2:]
		default:
			return b.String(), s, true
		}
	}
}
