package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nudgehq/nudge/cmd/nudge/daemon"
	"github.com/spf13/cobra"
)

// procEnv reads a process's environment.
func procEnv(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatalf("environ of %d: %v", pid, err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// cmdlinesHolding lists the processes whose command line holds any of secrets.
func cmdlinesHolding(secrets ...string) []string {
	var hits []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				hits = append(hits, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
	}
	return hits
}

// nudge's own configuration and secrets never reach a pane or tmux's global environment,
// and no secret is ever on a command line: not the tmux server's (which keeps the argv of
// the client that started it), not any tmux client's nudge runs (logged by a wrapper).
func TestNoSecretInPaneEnvOrArgv(t *testing.T) {
	const apiToken = "nudge-test-api-secret-7f3a9c"
	t.Setenv("NUDGE_API_TOKEN", apiToken)
	t.Setenv("NUDGE_RATE_LIMIT", "10/min")
	t.Setenv("MY_AGENT_API_KEY", "agent-key-stays")
	cfg := newTestConfig(t)
	cfg.Auth.SharedToken = apiToken
	// Every tmux invocation of the daemon goes through a wrapper that logs its argv.
	dir := t.TempDir()
	argvLog := filepath.Join(dir, "argv.log")
	real, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "tmux")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> " + argvLog + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Panes.Tmux = wrapper
	td := startDaemon(t, cfg)
	td.c = newClient(cfg.Socket, apiToken)

	rt1 := td.spawnShell("w1", "one", "sh", "-c", "exec cat")
	rt2 := td.spawnShell("w1", "two", "sh", "-c", "exec cat") // new-window, not new-session
	for _, rt := range []runtimeView{rt1, rt2} {
		env := procEnv(t, rt.PID)
		for k := range env {
			if strings.HasPrefix(k, "NUDGE_") && k != "NUDGE_SOCKET" && k != "NUDGE_RUNTIME_ID" && k != "NUDGE_RUNTIME_TOKEN" {
				t.Errorf("pane %s has %s in its environment", rt.PaneID, k)
			}
		}
		if env["NUDGE_RUNTIME_TOKEN"] == "" || env["NUDGE_SOCKET"] != cfg.Socket || env["NUDGE_RUNTIME_ID"] != rt.RuntimeID {
			t.Errorf("pane %s lacks its own NUDGE_RUNTIME_*/NUDGE_SOCKET: %v", rt.PaneID, env)
		}
		if env["MY_AGENT_API_KEY"] != "agent-key-stays" || env["PATH"] == "" || env["HOME"] == "" {
			t.Errorf("pane %s lost the user's environment (PATH, HOME, API keys): %v", rt.PaneID, env)
		}
	}
	tok1, tok2 := procEnv(t, rt1.PID)["NUDGE_RUNTIME_TOKEN"], procEnv(t, rt2.PID)["NUDGE_RUNTIME_TOKEN"]
	global := td.tmux("show-environment", "-g")
	if strings.Contains(global, "NUDGE_") || strings.Contains(global, apiToken) {
		t.Errorf("tmux's global environment holds nudge's variables:\n%s", global)
	}
	serverPID, _ := strconv.Atoi(strings.TrimSpace(td.tmux("display-message", "-p", "#{pid}")))
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(serverPID) + "/cmdline")
	for _, s := range []string{tok1, tok2, apiToken} {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("the tmux server's command line holds a secret: %q", strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	if hits := cmdlinesHolding(tok1, tok2, apiToken); len(hits) > 0 {
		t.Errorf("command lines holding a secret:\n%s", strings.Join(hits, "\n"))
	}
	logged, err := os.ReadFile(argvLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{tok1, tok2, apiToken} {
		if bytes.Contains(logged, []byte(s)) {
			t.Errorf("a tmux command line nudge ran held a secret:\n%s", logged)
			break
		}
	}
}

// --api-token-file reads the secret from a 0600 file; --api-token on the command line
// still works but warns that ps shows it.
func TestAPITokenFile(t *testing.T) {
	parse := func(args ...string) (daemon.Config, string, error) {
		cfg := daemon.DefaultConfig()
		var errb bytes.Buffer
		env := &cliEnv{stdin: strings.NewReader(""), stdout: &errb, stderr: &errb, getenv: os.Getenv}
		cmd := &cobra.Command{Use: "serve"}
		daemon.Flags(cmd.Flags(), &cfg)
		if err := cmd.ParseFlags(args); err != nil {
			return cfg, errb.String(), err
		}
		if err := envFallback(cmd, env); err != nil {
			return cfg, errb.String(), err
		}
		err := cfg.LoadToken(env.stderr)
		return cfg, errb.String(), err
	}
	file := filepath.Join(t.TempDir(), "api-token")
	if err := os.WriteFile(file, []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, out, err := parse("--api-token-file", file); err != nil || cfg.Auth.SharedToken != "from-a-file" || out != "" {
		t.Fatalf("--api-token-file: %q %q %v", cfg.Auth.SharedToken, out, err)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := parse("--api-token-file", file); err == nil || !strings.Contains(err.Error(), "0600") {
		t.Fatalf("a group-readable token file was accepted: %v", err)
	}
	if cfg, out, err := parse("--api-token", "on-the-cmdline"); err != nil || cfg.Auth.SharedToken != "on-the-cmdline" || !strings.Contains(out, "readable by every local user") {
		t.Fatalf("--api-token: %q %q %v", cfg.Auth.SharedToken, out, err)
	}
	t.Setenv("NUDGE_API_TOKEN", "from-env")
	if cfg, out, err := parse(); err != nil || cfg.Auth.SharedToken != "from-env" || out != "" {
		t.Fatalf("NUDGE_API_TOKEN: %q %q %v", cfg.Auth.SharedToken, out, err)
	}
	if _, ok := os.LookupEnv("NUDGE_API_TOKEN"); ok {
		t.Fatalf("NUDGE_API_TOKEN is still in the daemon's environment after it was read")
	}
}
