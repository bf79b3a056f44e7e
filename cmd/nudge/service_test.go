package main

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
