package controlmode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// serverArgs are the global tmux flags selecting the server.
func (c *Config) serverArgs() []string {
	var a []string
	switch {
	case c.SocketPath != "":
		a = append(a, "-S", c.SocketPath)
	case c.SocketName != "":
		a = append(a, "-L", c.SocketName)
	}
	if c.ConfigFile != "" {
		a = append(a, "-f", c.ConfigFile)
	}
	return a
}

// attachArgs is the tmux argv (without the binary) of the control client.
func (c *Config) attachArgs() []string {
	a := append(c.serverArgs(), "-u", "-C", "attach-session", "-t", "="+c.Session)
	var flags []string
	if c.PauseAfter > 0 {
		secs := (c.PauseAfter + time.Second - 1) / time.Second
		flags = append(flags, "pause-after="+strconv.FormatInt(int64(secs), 10))
	}
	if c.NoOutput {
		flags = append(flags, "no-output")
	}
	if c.IgnoreSize {
		flags = append(flags, "ignore-size")
	}
	if c.ReadOnly {
		flags = append(flags, "read-only")
	}
	if len(flags) > 0 {
		a = append(a, "-f", strings.Join(flags, ","))
	}
	return a
}

// command builds the exec.Cmd running tmux with args, locally or through ssh.
func (c *Config) command(ctx context.Context, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if c.SSHHost != "" {
		argv := SSHArgv(c.SSH, c.SSHConfig, c.SSHHost, append([]string{c.Tmux}, args...))
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	} else {
		cmd = exec.CommandContext(ctx, c.Tmux, args...)
	}
	cmd.Env = ChildEnv(os.Environ())
	return cmd
}

// SSHArgv is the argv that runs argv on host through ssh: `ssh [-F config] -T -- host
// '<argv, each word single-quoted>'`. ssh is the binary ("" means "ssh"). No other option
// is passed, so the user's ssh config (ControlMaster, keys, jump hosts) applies as it is.
func SSHArgv(ssh, config, host string, argv []string) []string {
	if ssh == "" {
		ssh = "ssh"
	}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shellQuote(a)
	}
	out := []string{ssh}
	if config != "" {
		out = append(out, "-F", config)
	}
	return append(out, "-T", "--", host, strings.Join(quoted, " "))
}

// shellQuote quotes s for a POSIX shell: single quotes, ' as '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ChildEnv is environ as a tmux process nudge starts may see it. Without TMUX and
// TMUX_PANE, so a nudge running inside tmux can still attach to its own server. Without
// any NUDGE_* variable: nudge's own configuration and secrets (NUDGE_API_TOKEN, the
// NUDGE_<FLAG> form of --api-token) must not reach a tmux server, whose global
// environment every pane inherits. A pane gets NUDGE_SOCKET, NUDGE_RUNTIME_ID and
// NUDGE_RUNTIME_TOKEN for itself, set explicitly when it is launched. Everything else
// (PATH, HOME, the user's API keys) passes.
func ChildEnv(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if strings.HasPrefix(kv, "TMUX=") || strings.HasPrefix(kv, "TMUX_PANE=") || strings.HasPrefix(kv, "NUDGE_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// ensureSession creates the session with a plain new-session -d if has-session says it
// is missing. A concurrent creator winning the race is not an error.
func ensureSession(ctx context.Context, cfg *Config) error {
	has := cfg.command(ctx, append(cfg.serverArgs(), "has-session", "-t", "="+cfg.Session)...)
	has.WaitDelay = cfg.CloseTimeout
	if has.Run() == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	args := append(cfg.serverArgs(), "new-session", "-d", "-s", cfg.Session)
	args = append(args, cfg.NewSessionArgs...)
	nc := cfg.command(ctx, args...)
	nc.WaitDelay = cfg.CloseTimeout
	out, err := nc.CombinedOutput()
	if err == nil {
		return nil
	}
	recheck := cfg.command(ctx, append(cfg.serverArgs(), "has-session", "-t", "="+cfg.Session)...)
	recheck.WaitDelay = cfg.CloseTimeout
	if recheck.Run() == nil {
		return nil
	}
	return fmt.Errorf("new-session %q: %w: %s", cfg.Session, err, strings.TrimSpace(string(out)))
}

// tailBuffer keeps the last max bytes written to it (tmux's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
