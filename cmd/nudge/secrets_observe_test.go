package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/auth"
)

// A runtime's renewed token is kept where only a client in its pane looks (the pane's
// option), not in the workspace session's environment, which tmux hands to every program
// started in the session later: before, a runtime spawned after another's renewal (at
// every daemon start, every live runtime's) got that role's token in its environment.
func TestRenewedTokenNotInOtherPanes(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.Auth.RuntimeTokenTTL = 3 * time.Second
	td := startDaemon(t, cfg)
	a, _ := rawCat(t, td, "w1", "alpha")
	first := paneEnv(t, a.PID, "NUDGE_RUNTIME_TOKEN")
	name := auth.RuntimeTokenVar("alpha")
	var renewed string
	deadline := time.Now().Add(30 * time.Second)
	for renewed == "" && time.Now().Before(deadline) {
		opt, _ := tmuxOut(td, "show-options", "-p", "-q", "-v", "-t", a.PaneID, auth.RuntimeTokenOption)
		env, _ := tmuxOut(td, "show-environment", "-t", "=agents_w1", name)
		for _, v := range []string{strings.TrimSpace(opt), strings.TrimPrefix(strings.TrimSpace(env), name+"=")} {
			if strings.HasPrefix(v, "nudge1.") && v != first {
				renewed = v
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if renewed == "" {
		t.Fatal("the runtime token was never renewed")
	}
	if env := td.tmux("show-environment", "-t", "=agents_w1"); strings.Contains(env, renewed) {
		t.Errorf("the session's environment holds alpha's renewed token:\n%s", env)
	}
	b, _ := rawCat(t, td, "w1", "beta")
	env := procEnv(t, b.PID)
	for k, v := range env {
		if strings.HasPrefix(k, "NUDGE_RUNTIME_TOKEN_") || v == renewed || v == first {
			t.Errorf("beta's environment holds alpha's token as %s", k)
		}
	}
	if env["NUDGE_RUNTIME_TOKEN"] == "" {
		t.Errorf("beta lacks its own token")
	}
}
