package controlmode

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ErrPaneGone matches the *PaneGoneError of a command sent with IfPane whose pane did not
// qualify: the command did not run.
var ErrPaneGone = errors.New("controlmode: pane is gone, dead, or runs another process")

// PaneGoneError says what tmux found instead of the pane an IfPane line wanted, read in
// the same server step as the decision.
type PaneGoneError struct {
	Target string
	Pane   string // the pane id tmux resolved, "" if the target does not exist
	Dead   bool   // the pane's program has exited
	PID    int    // the pane's first process
	// Command is the pane's foreground program (#{pane_current_command}) as an IfAgent
	// line's else branch read it; "" for an IfPane line. Shell says it is a shell (IsShell).
	Command string
	Shell   bool
}

func (e *PaneGoneError) Error() string {
	switch {
	case e.Pane == "":
		return fmt.Sprintf("controlmode: pane %s does not exist", e.Target)
	case e.Dead:
		return fmt.Sprintf("controlmode: pane %s is dead", e.Pane)
	case e.Shell:
		return fmt.Sprintf("controlmode: pane %s (pid %d) has the shell %s in the foreground, not the agent", e.Pane, e.PID, e.Command)
	}
	return fmt.Sprintf("controlmode: pane %s runs another process (pid %d)", e.Pane, e.PID)
}

// Is reports whether target is ErrPaneGone.
func (e *PaneGoneError) Is(target error) bool { return target == ErrPaneGone }

// goneLine starts what the else branch of an IfPane line prints.
const goneLine = "nudge:pane-gone"

const ifPanePrefix = "if-shell -F -t "

// IfPane returns a command line that runs cmd (one command line, as Go takes) only if
// pane target exists, its program is alive and, if pid is not 0, that program's pid is
// pid; decided in the same server step that runs cmd, so no exit, respawn or reuse of
// the pane id (a restarted server numbers its panes from %0 again) can slip in between.
// Send it with Go, Do or DoAll like any other line: its reply is cmd's, or a
// *PaneGoneError (ErrPaneGone) saying what was found instead.
//
// It exists because tmux 3.3a segfaults when paste-buffer writes to a pane whose program
// has exited under remain-on-exit, and because text typed into the wrong process cannot
// be taken back. The line yields two reply blocks (if-shell's, then its branch's); the
// connection matches both.
func IfPane(target string, pid int, cmd string) (string, error) {
	return ifPane(target, pid, cmd, false)
}

// IfAgent is IfPane with one condition more, decided in the same server step: the pane's
// foreground program (tmux's #{pane_current_command}: the process group that owns the
// pane's terminal) is not a shell (IsShell). An agent the user started from a shell in
// their own pane (seed 004: `tmux new -s ps`, then `claude`) leaves that shell in the
// foreground when it exits or is suspended, and text typed there runs as commands. A
// refused line's *PaneGoneError has Shell set.
func IfAgent(target string, pid int, cmd string) (string, error) {
	return ifPane(target, pid, cmd, true)
}

func ifPane(target string, pid int, cmd string, agent bool) (string, error) {
	if err := checkCommand(cmd); err != nil {
		return "", err
	}
	if pid < 0 {
		return "", fmt.Errorf("controlmode: IfPane: negative pid %d", pid)
	}
	return buildIfPane(target, pid, cmd, agent)
}

// shellPattern is what IsShell matches, as a regular expression both Go and tmux's
// #{m/r:} (POSIX extended) read alike. It holds no ',', '}' or '#', which a format
// argument cannot.
const shellPattern = `^(sh|bash|dash|ash|zsh|ksh|mksh|oksh|pdksh|yash|csh|tcsh|fish|nu|elvish|xonsh|pwsh|busybox)$`

var shellRE = regexp.MustCompile(shellPattern)

// IsShell reports whether name, a pane's current command as tmux gives it (the program's
// name without its directory or a login shell's leading '-'), is a shell's.
func IsShell(name string) bool { return shellRE.MatchString(name) }

// buildIfPane assembles the line. A missing pane expands every format empty (if-shell
// and display-message do not fail on a missing target), which the condition reads as
// false. agent adds IfAgent's condition.
func buildIfPane(target string, pid int, cmd string, agent bool) (string, error) {
	t, err := Quote(target)
	if err != nil {
		return "", err
	}
	c, err := Quote(cmd)
	if err != nil {
		return "", err
	}
	// In a control client a missing target is not an error for if-shell: it resolves to
	// the client's current pane. A pane id target is therefore compared too.
	var alive string
	id := paneIDTarget(target)
	switch {
	case id && pid != 0:
		alive = "#{&&:#{==:#{pane_id}," + target + "},#{==:#{pane_pid}," + strconv.Itoa(pid) + "}}"
	case id:
		alive = "#{==:#{pane_id}," + target + "}"
	case pid != 0:
		alive = "#{==:#{pane_pid}," + strconv.Itoa(pid) + "}"
	default:
		alive = "#{pane_id}"
	}
	seen := " #{pane_id} #{pane_dead} #{pane_pid}"
	if agent {
		alive = "#{?#{m/r:" + shellPattern + ",#{pane_current_command}},0," + alive + "}"
		seen += " #{pane_current_command}"
	}
	cond, _ := Quote("#{?pane_dead,0," + alive + "}")
	gone, _ := Quote("display-message -p -t " + t + " '" + goneLine + seen + "'")
	return ifPanePrefix + t + " " + cond + " " + c + " " + gone, nil
}

// parseIfPane reports whether line is exactly what IfPane or IfAgent builds (for a command that
// checkCommand accepts) and returns the target it names.
func parseIfPane(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, ifPanePrefix)
	if !ok {
		return "", false
	}
	var tok [3]string
	for i := range tok {
		if tok[i], rest, ok = unquote(rest); !ok || !strings.HasPrefix(rest, " ") {
			return "", false
		}
		rest = rest[1:]
	}
	target, cond, cmd := tok[0], tok[1], tok[2]
	pid := 0
	if _, p, ok := strings.Cut(cond, "#{pane_pid},"); ok {
		end := strings.IndexByte(p, '}')
		n, err := strconv.Atoi(p[:max(end, 0)])
		if err != nil || n <= 0 {
			return "", false
		}
		pid = n
	}
	if target == "" || checkCommand(cmd) != nil {
		return "", false
	}
	agent := strings.Contains(cond, "#{pane_current_command}")
	if built, err := buildIfPane(target, pid, cmd, agent); err != nil || built != line {
		return "", false
	}
	return target, true
}

// paneIDTarget reports whether target is a pane id (%N).
func paneIDTarget(target string) bool {
	if len(target) < 2 || target[0] != '%' {
		return false
	}
	_, err := strconv.ParseUint(target[1:], 10, 32)
	return err == nil
}

// parseGone reads an IfPane else branch's reply; ok is false for any other reply. For a
// missing pane id tmux describes the client's current pane, which is not the target.
func parseGone(target string, lines []string) (*PaneGoneError, bool) {
	if len(lines) != 1 {
		return nil, false
	}
	rest, ok := strings.CutPrefix(lines[0], goneLine)
	if !ok {
		return nil, false
	}
	f := strings.Fields(rest)
	e := &PaneGoneError{Target: target}
	if (len(f) == 3 || len(f) == 4) && (!paneIDTarget(target) || f[0] == target) {
		e.Pane, e.Dead = f[0], f[1] == "1"
		e.PID, _ = strconv.Atoi(f[2])
		if len(f) == 4 {
			e.Command, e.Shell = f[3], IsShell(f[3])
		}
	}
	return e, true
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
