package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nudge service install writes a systemd user unit that systemd accepts; uninstall
// removes it; a secret or a wrong serve flag is refused before anything is written.
func TestServiceInstall(t *testing.T) {
	xdg := t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": xdg, "PATH": os.Getenv("PATH")}
	unit := filepath.Join(xdg, "systemd", "user", "nudge.service")
	for _, bad := range [][]string{{"--api-token", "s3cret"}, {"--bogus"}, {"extra"}} {
		_, errOut, code := runWithEnv(env, append([]string{"service", "install", "--no-start", "--"}, bad...)...)
		if code != 2 || !strings.Contains(errOut, "--help' for usage") {
			t.Errorf("install -- %v: exit %d %q", bad, code, errOut)
		}
	}
	if _, err := os.Stat(unit); err == nil {
		t.Fatal("a refused install wrote the unit")
	}
	out, errOut, code := runWithEnv(env, "service", "install", "--no-start", "--", "--root", "/srv/app", "--quiet-window", "10s")
	if code != 0 || !strings.Contains(out, "wrote "+unit) {
		t.Fatalf("install: exit %d %q %q", code, out, errOut)
	}
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	for _, want := range []string{"ExecStart=" + exe + " serve --root /srv/app --quiet-window 10s", "Restart=on-failure", "WantedBy=default.target"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("unit lacks %q:\n%s", want, b)
		}
	}
	if sa, err := exec.LookPath("systemd-analyze"); err == nil {
		rt := privateTempDir(t)
		cmd := exec.Command(sa, "--user", "verify", unit)
		cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("systemd-analyze verify: %v: %s", err, out)
		}
	}
	if out, _, code := runWithEnv(env, "service", "install", "--print", "--os", "darwin"); code != 0 || !strings.Contains(out, "<key>KeepAlive</key>") {
		t.Errorf("--print --os darwin: exit %d %q", code, out)
	}
	if out, _, code := runWithEnv(env, "service", "uninstall", "--no-stop"); code != 0 || !strings.Contains(out, "removed "+unit) {
		t.Errorf("uninstall: exit %d %q", code, out)
	}
	if _, err := os.Stat(unit); err == nil {
		t.Error("uninstall left the unit")
	}
}

// Seed 002's helpers: a PTY in a directory with no agent (--agent shell, no argv), its
// state on the status line, and switch (TestSwitchAndAttachMoveTheOperatorsClient).
func TestShellPTYInADirectory(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	dir := filepath.Join(td.cfg.Panes.Roots[0], "proj")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := td.runCLI("spawn", "--workspace", "w", "--role", "pty", "--agent", "shell", "--dir", dir)
	if code != 0 {
		t.Fatalf("spawn: exit %d %s %s", code, out, errOut)
	}
	rt := td.waitRuntime("rt_w.pty", func(r runtimeView) bool { return r.Status == "ready" })
	if got := strings.TrimSpace(td.tmux("display-message", "-p", "-t", rt.PaneID, "#{pane_current_path}")); got != dir {
		t.Errorf("the shell runs in %q, want %q", got, dir)
	}
	td.tmux("send-keys", "-t", rt.PaneID, "-l", "echo PTY-$((6*7))")
	td.tmux("send-keys", "-t", rt.PaneID, "Enter")
	td.waitPane(rt.PaneID, "the shell's answer", func(s string) bool { return strings.Contains(s, "PTY-42") })
	if out, _, code := td.runCLI("status", "--short"); code != 0 || !strings.HasPrefix(out, "[pty: ") {
		t.Errorf("status --short: exit %d %q", code, out)
	}
}
