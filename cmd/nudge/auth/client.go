package auth

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"time"
)

// RuntimeToken is the token a client inside a managed pane uses: $NUDGE_RUNTIME_TOKEN, or,
// when that expires within a minute, the renewed one from the session's environment
// (tmux show-environment on $TMUX_PANE's session). getenv reads the client's environment.
func RuntimeToken(getenv func(string) string) string {
	tok := getenv("NUDGE_RUNTIME_TOKEN")
	if tok == "" {
		return ""
	}
	if cl, err := Peek(tok); err == nil && time.Until(cl.Expiry()) > time.Minute {
		return tok
	}
	if fresh := renewedToken(getenv); fresh != "" {
		return fresh
	}
	return tok
}

// renewedToken reads NUDGE_RUNTIME_TOKEN_<role> from the tmux session of $TMUX_PANE.
func renewedToken(getenv func(string) string) string {
	id, pane, tmux := getenv("NUDGE_RUNTIME_ID"), getenv("TMUX_PANE"), getenv("TMUX")
	_, role, ok := strings.Cut(id, ".")
	if !ok || pane == "" || tmux == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	name := RuntimeTokenVar(role)
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
