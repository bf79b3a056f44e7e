package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
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

// A workspace on another host: every ssh nudge runs (spawn, control connection, human-key
// watch, the token's renewal) has no secret on its command line and none of nudge's own
// variables in its environment; the remote pane's token travels on ssh's stdin only.
func TestNoSecretOnSSHCommandLine(t *testing.T) {
	const apiToken = "nudge-test-api-secret-5e1d0b"
	t.Setenv("NUDGE_API_TOKEN", apiToken)
	h := startSSHHost(t)
	cfg := newTestConfig(t)
	cfg.Auth.SharedToken = apiToken
	cfg.Auth.RuntimeTokenTTL = 4 * time.Second // renewed over the connection during the test
	cfg.Panes.SSHConfig = h.config
	dir := t.TempDir()
	argvLog, envLog := filepath.Join(dir, "argv.log"), filepath.Join(dir, "env.log")
	real, err := exec.LookPath("ssh")
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "ssh")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> " + argvLog + "\nenv | grep '^NUDGE_' >> " + envLog + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Panes.SSH = wrapper
	sock := cfg.Panes.SocketName
	t.Cleanup(func() { h.killServer(sock) }) // runs after the daemon stops
	td := startDaemon(t, cfg)
	td.c = newClient(cfg.Socket, apiToken)

	var rt runtimeView
	body := spawnBody{Workspace: "wr", Role: "b", Agent: "shell", Dir: cfg.Panes.Roots[0], Argv: []string{"sh", "-c", "exec cat"}, Host: h.alias}
	if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &rt); err != nil {
		t.Fatalf("spawn on the ssh host: %v", err)
	}
	rt = td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" && r.PID > 0 })
	first := procEnv(t, rt.PID)["NUDGE_RUNTIME_TOKEN"] // the "remote" host is this machine
	if first == "" {
		t.Fatal("the remote pane has no runtime token")
	}
	var renewed string
	for deadline := time.Now().Add(30 * time.Second); renewed == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		out, err := h.tmuxCmd(sock, "show-options", "-p", "-q", "-v", "-t", rt.PaneID, auth.RuntimeTokenOption).Output()
		if v := strings.TrimSpace(string(out)); err == nil && v != "" && v != first {
			renewed = v
		}
	}
	if renewed == "" {
		t.Fatal("the remote runtime's token was never renewed into its pane")
	}
	if hits := cmdlinesHolding(first, renewed, apiToken); len(hits) > 0 {
		t.Errorf("command lines holding a secret:\n%s", strings.Join(hits, "\n"))
	}
	argv, _ := os.ReadFile(argvLog)
	if !bytes.Contains(argv, []byte(h.alias)) {
		t.Fatalf("the ssh wrapper was not used:\n%s", argv)
	}
	for _, s := range []string{first, renewed, apiToken} {
		if bytes.Contains(argv, []byte(s)) {
			t.Errorf("an ssh command line held a secret:\n%s", argv)
			break
		}
	}
	if env, _ := os.ReadFile(envLog); len(env) > 0 {
		t.Errorf("ssh got nudge's own variables:\n%s", env)
	}
}
