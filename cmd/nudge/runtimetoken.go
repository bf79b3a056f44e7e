package main

// The daemon's side of runtime tokens is auth.Authority's (minting, renewal, revocation);
// here are the daemon's adapters to it, and the client's side: a process in a managed pane
// reads its renewed token from the tmux session when the inherited one is about to expire.

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/panes"
)

// tokenRuntimes is the registry as the authority's renewal loop sees it (auth.Runtimes).
type tokenRuntimes struct{ reg *panes.Registry }

// LiveRuntimes lists the live managed runtimes.
func (t tokenRuntimes) LiveRuntimes() []auth.LiveRuntime {
	var out []auth.LiveRuntime
	for _, rt := range t.reg.List() {
		if rt.Managed && panes.Live(rt.Status) {
			out = append(out, auth.LiveRuntime{ID: rt.RuntimeID, Workspace: rt.WorkspaceID, Role: rt.Role})
		}
	}
	return out
}

// SetSessionEnv sets (or with val "" unsets) a variable in agents_<ws>'s environment.
func (t tokenRuntimes) SetSessionEnv(ctx context.Context, ws, name, val string) error {
	conn, err := t.reg.Conn(ws)
	if err != nil {
		return err
	}
	target, err := controlmode.Quote("=" + panes.SessionName(ws))
	if err != nil {
		return err
	}
	cmd := "set-environment -t " + target + " -u " + name
	if val != "" {
		q, err := controlmode.Quote(val)
		if err != nil {
			return err
		}
		cmd = "set-environment -t " + target + " " + name + " " + q
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = conn.Do(ctx, cmd)
	return err
}

// runtimeToken is the token a client inside a managed pane uses: $NUDGE_RUNTIME_TOKEN, or,
// when that expires within a minute, the renewed one from the session's environment.
func runtimeToken(env *cliEnv) string {
	tok := env.getenv("NUDGE_RUNTIME_TOKEN")
	if tok == "" {
		return ""
	}
	if cl, err := auth.Peek(tok); err == nil && time.Until(cl.Expiry()) > time.Minute {
		return tok
	}
	if fresh := renewedToken(env); fresh != "" {
		return fresh
	}
	return tok
}

// renewedToken reads NUDGE_RUNTIME_TOKEN_<role> from the tmux session of $TMUX_PANE.
func renewedToken(env *cliEnv) string {
	id, pane, tmux := env.getenv("NUDGE_RUNTIME_ID"), env.getenv("TMUX_PANE"), env.getenv("TMUX")
	_, role, ok := strings.Cut(id, ".")
	if !ok || pane == "" || tmux == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	name := auth.RuntimeTokenVar(role)
	cmd := exec.CommandContext(ctx, "tmux", "show-environment", "-t", pane, name)
	cmd.Env = append(os.Environ(), "TMUX="+tmux)
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), name+"=")
	if !ok {
		return ""
	}
	return v
}
