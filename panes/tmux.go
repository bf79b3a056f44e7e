package panes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// tmuxClient runs tmux commands as subprocesses (locally, or over ssh on a workspace's
// host), each bounded by CommandTimeout. It has no state and starts no goroutine.
type tmuxClient struct {
	cfg *Config
}

// run runs one tmux invocation as a subprocess: argv, never a shell locally; over ssh
// the argv is single-quoted for the remote shell. Spawn, restart and the sweep's fallback
// (when no control connection is up) use it; nothing on the hot path does.
//
// A command list that sets a pane's environment (-e, which carries the runtime token)
// is not put on the command line, where every local user can read it (ps, /proc) and
// where a tmux server started by it keeps it for its lifetime: tmux gets
// `start-server ; source-file -` and reads the commands from its stdin.
//
// A local server of the user's own (not nudge's) is checked first: its socket must be
// one of this uid (foreignSocket), for a register as for every command after it, the
// dial of the workspace's control connection included (conns.dial runs has-session).
func (t *tmuxClient) run(ctx context.Context, at server, args ...string) (string, error) {
	if at.host == "" && at.socket != "" {
		if err := foreignSocket(t.cfg, at.socket); err != nil {
			return "", err
		}
	}
	var stdin string
	host := at.host
	argv := t.argv(at, args)
	if slices.Contains(args, "-e") {
		script, err := tmuxScript(args)
		if err != nil {
			return "", &tmuxError{Args: args, Err: err}
		}
		stdin, argv = script, t.argv(at, []string{"start-server", ";", "source-file", "-"})
	}
	bctx, cancel := t.boundCtx(ctx) // a tmux (or ssh) that never answers fails the command
	defer cancel()
	cmd := exec.CommandContext(bctx, argv[0], argv[1:]...)
	cmd.Env = controlmode.ChildEnv(os.Environ())
	cmd.Stdin = strings.NewReader(stdin)
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		te := &tmuxError{Args: args, Stderr: strings.TrimSpace(stderr.String()), Err: err}
		if bctx.Err() != nil && ctx.Err() == nil {
			te.Err = fmt.Errorf("no answer within %s: %w", t.cfg.CommandTimeout, context.DeadlineExceeded)
		}
		var ee *exec.ExitError
		if host != "" && errors.As(err, &ee) && ee.ExitCode() == 255 { // ssh's own failure, not tmux's
			return stdout.String(), &wrapped{nudge.NewError(nudge.HostUnreachable, "host "+host+": "+te.Stderr), te}
		}
		return stdout.String(), te
	}
	return stdout.String(), nil
}

// tmuxScript turns a command list (commands separated by ";" arguments) into one line of
// tmux's command syntax, every argument quoted.
func tmuxScript(args []string) (string, error) {
	var cmds []string
	for c := range splitCommands(args) {
		parts := make([]string, len(c))
		for i, a := range c {
			q, err := controlmode.QuoteText(a) // newlines (a first prompt) as "\n"
			if err != nil {
				return "", err
			}
			parts[i] = q
		}
		cmds = append(cmds, strings.Join(parts, " "))
	}
	return strings.Join(cmds, " ; ") + "\n", nil
}

// splitCommands yields the commands of a list separated by ";" arguments.
func splitCommands(args []string) func(func([]string) bool) {
	return func(yield func([]string) bool) {
		start := 0
		for i := 0; i <= len(args); i++ {
			if i == len(args) || args[i] == ";" {
				if i > start && !yield(args[start:i]) {
					return
				}
				start = i + 1
			}
		}
	}
}

func (t *tmuxClient) argv(at server, args []string) []string {
	argv := []string{t.cfg.Tmux}
	if t.cfg.ConfigFile != "" && at.socket == "" { // a user's own server keeps its own configuration
		argv = append(argv, "-f", t.cfg.ConfigFile)
	}
	argv = append(argv, socketArgs(t.cfg, at.socket)...)
	argv = append(argv, args...)
	if at.host == "" {
		return argv
	}
	return controlmode.SSHArgv(t.cfg.SSH, t.cfg.SSHConfig, at.host, argv)
}

// shellQuote quotes s for a POSIX shell (the remote side of ssh only).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// paneKey names a pane across tmux servers: pane ids (%N) are unique within one server
// only, and every host runs its own (nudge's, and those of users' own sessions).
type paneKey struct {
	srv server
	n   int
}

// validHost refuses a host ssh would read as an option or that holds a space or a
// control character; the rest is ssh's to judge ([user@]host, or a Host alias).
func validHost(h string) error {
	if strings.HasPrefix(h, "-") || strings.ContainsFunc(h, func(c rune) bool { return c <= ' ' || c == 0x7f }) || len(h) > 255 {
		return nudge.NewError(nudge.BadRequest, fmt.Sprintf("invalid host %q", h))
	}
	return nil
}

func displayHost(h string) string {
	if h == "" {
		return "local"
	}
	return h
}

// keyOf is the key of rt's current pane (n < 0 if it has none).
func keyOf(rt *nudge.Runtime) paneKey { return paneKey{serverOf(rt), paneNum(rt.PaneID)} }

// tmuxError is a failed tmux subprocess.
type tmuxError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *tmuxError) Error() string {
	return fmt.Sprintf("tmux %s: %v: %s", e.Args[0], e.Err, e.Stderr)
}

func (e *tmuxError) Unwrap() error { return e.Err }

// isMissing reports whether a tmux error means the session or server does not exist.
func isMissing(err error) bool {
	var te *tmuxError
	if !errors.As(err, &te) {
		return false
	}
	for _, s := range []string{"can't find", "no server running", "error connecting to", "no current"} {
		if strings.Contains(te.Stderr, s) {
			return true
		}
	}
	return false
}

// paneFormat is what the sweep lists; the window name is last because it may hold spaces
// (the foreground command's spaces, if any, become '_').
const paneFormat = "#{pane_id} #{pane_dead} #{pane_dead_status} #{pane_dead_signal} #{pane_pid} " +
	"#{pane_index} #{window_index} #{s/ /_/:pane_current_command} #{session_name} #{window_name}"

// paneInfo is one pane as tmux reports it.
type paneInfo struct {
	ID          string // %N
	Dead        bool
	ExitStatus  *int // exit status, or 128+signal; nil if alive or unknown
	PID         int
	Index       int
	WindowIndex int
	Session     string
	Window      string
	Command     string // the pane's foreground command (pane_current_command)
}

// parsePanes parses lines of paneFormat. Malformed lines are skipped.
func parsePanes(lines []string) []paneInfo {
	var out []paneInfo
	for _, l := range lines {
		f := strings.SplitN(l, " ", 10)
		if len(f) != 10 || !strings.HasPrefix(f[0], "%") {
			continue
		}
		p := paneInfo{ID: f[0], Dead: f[1] == "1", Command: f[7], Session: f[8], Window: f[9]}
		p.PID, _ = strconv.Atoi(f[4])
		p.Index, _ = strconv.Atoi(f[5])
		p.WindowIndex, _ = strconv.Atoi(f[6])
		if p.Dead {
			p.ExitStatus = exitStatus(f[2], f[3])
		}
		out = append(out, p)
	}
	return out
}

// isShell reports whether a pane's foreground command is a shell (a login shell's "-bash"
// too): the programs a pane falls back to when the agent started in it ends. One list
// with the typing guard's (controlmode.IsShell).
func isShell(cmd string) bool {
	return controlmode.IsShell(filepath.Base(strings.TrimPrefix(cmd, "-")))
}

func exitStatus(status, signal string) *int {
	if n, err := strconv.Atoi(status); err == nil {
		return &n
	}
	if n, err := strconv.Atoi(signal); err == nil {
		n += 128
		return &n
	}
	return nil
}

// paneNum turns "%N" into N, or -1.
func paneNum(id string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "%"))
	if err != nil || !strings.HasPrefix(id, "%") {
		return -1
	}
	return n
}

func splitLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// quoteLine builds a tmux command line with every argument quoted for the tmux parser.
func quoteLine(args []string) (string, bool) {
	parts := make([]string, len(args))
	for i, a := range args {
		q, err := controlmode.Quote(a)
		if err != nil {
			return "", false
		}
		parts[i] = q
	}
	return strings.Join(parts, " "), true
}

// boundCtx bounds one tmux command by CommandTimeout: a tmux server that stops answering
// (or a control client that died with the command in flight) must not hold a stop or a
// relaunch for good.
func (t *tmuxClient) boundCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, t.cfg.CommandTimeout)
}

// pastEnd runs a tmux command, again (up to launchTries times, launchBackoff apart) while
// tmux says its server went away under it (killed, or ending because its last pane
// closed): such a command created nothing that survives, so running it again is safe, and
// a server that has ended answers the next try with "no server running". A launch, and a
// list of panes right after a stop closed the server's last one, meet it.
func (t *tmuxClient) pastEnd(ctx context.Context, at server, args ...string) (string, error) {
	for try := 1; ; try++ {
		out, err := t.run(ctx, at, args...)
		if err == nil || try == launchTries || !serverLost(err) {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(launchBackoff):
		}
	}
}

const (
	launchTries   = 5
	launchBackoff = 200 * time.Millisecond
)

// serverLost: the tmux server ended while it ran the command.
func serverLost(err error) bool {
	var te *tmuxError
	if !errors.As(err, &te) {
		return false
	}
	for _, s := range []string{"server exited unexpectedly", "lost server", "Connection refused", "Connection reset"} {
		if strings.Contains(te.Stderr, s) {
			return true
		}
	}
	return false
}
