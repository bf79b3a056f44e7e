package auth

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/nudgehq/nudge/controlmode"
)

// RuntimeToken is the token a client inside a managed pane uses: $NUDGE_RUNTIME_TOKEN, or,
// when that expires within a minute, the renewed one from tmux ($TMUX_PANE's option
// RuntimeTokenOption). getenv reads the client's environment.
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

// renewedToken reads the renewed token from $TMUX_PANE's option (RuntimeTokenOption), or,
// from a daemon older than that, from the session's NUDGE_RUNTIME_TOKEN_<role>.
func renewedToken(getenv func(string) string) string {
	id, pane, tmux := getenv("NUDGE_RUNTIME_ID"), getenv("TMUX_PANE"), getenv("TMUX")
	_, role, ok := strings.Cut(id, ".")
	if !ok || pane == "" || tmux == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// tmux gets the environment without nudge's own variables (this client's token among
	// them), as every tmux nudge runs does.
	env := append(controlmode.ChildEnv(os.Environ()), "TMUX="+tmux)
	tmuxOut := func(args ...string) string {
		cmd := exec.CommandContext(ctx, "tmux", args...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	if v := tmuxOut("show-options", "-p", "-q", "-v", "-t", pane, RuntimeTokenOption); v != "" {
		return v
	}
	name := RuntimeTokenVar(role)
	if v, ok := strings.CutPrefix(tmuxOut("show-environment", "-t", pane, name), name+"="); ok {
		return v
	}
	return ""
}
