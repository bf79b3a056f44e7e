package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// doctorEnv is a private environment for `nudge doctor`: XDG dirs of its own and a PATH
// holding only tmux, bash and a stand-in gemini that prints its version. No daemon.
type doctorEnv struct {
	config, state, runtime string
}

func newDoctorEnv(t *testing.T) *doctorEnv {
	t.Helper()
	base := t.TempDir()
	e := &doctorEnv{config: filepath.Join(base, "config"), state: filepath.Join(base, "state"), runtime: filepath.Join(base, "run")}
	bin := filepath.Join(base, "bin")
	for _, p := range []string{"tmux", "bash"} {
		real, err := exec.LookPath(p)
		if err != nil {
			t.Skipf("no %s: %v", p, err)
		}
		writeFile(t, filepath.Join(bin, ".keep"), "")
		if err := os.Symlink(real, filepath.Join(bin, p)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(bin, "gemini"), "#!/bin/sh\necho 9.9.9-standin\n")
	if err := os.Chmod(filepath.Join(bin, "gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	t.Setenv("XDG_CONFIG_HOME", e.config)
	t.Setenv("XDG_STATE_HOME", e.state)
	t.Setenv("XDG_RUNTIME_DIR", e.runtime)
	t.Setenv("NUDGE_SOCKET", "")
	return e
}

// runDoctorCLI runs `nudge doctor ARGS` and returns its output and exit code.
func runDoctorCLI(t *testing.T, socket string, args ...string) (string, int) {
	t.Helper()
	var out lockedBuffer
	env := &cliEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &out, getenv: func(k string) string {
		if k == "NUDGE_SOCKET" {
			return socket
		}
		return os.Getenv(k)
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := run(ctx, env, append([]string{"doctor"}, args...))
	return out.String(), code
}

func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(out, l) {
			t.Errorf("doctor output lacks %q:\n%s", l, out)
		}
	}
}

func TestDoctor(t *testing.T) {
	t.Run("OKNoDaemon", func(t *testing.T) {
		e := newDoctorEnv(t)
		out, code := runDoctorCLI(t, "")
		if code != 0 {
			t.Fatalf("exit %d, want 0 (warnings only):\n%s", code, out)
		}
		sock := filepath.Join(e.runtime, "nudge", "nudge.sock")
		wantLines(t, out,
			"ok    local: tmux ",
			"ok    local: agent gemini (profile gemini): "+filepath.Join(filepath.Dir(e.runtime), "bin", "gemini")+", 9.9.9-standin",
			"ok    local: agent bash (profile shell): ",
			"warn  local: agent codex (profile codex) is not on PATH: install it",
			"ok    local: state dir "+filepath.Join(e.state, "nudge")+" does not exist yet",
			"ok    local: profile overrides: "+filepath.Join(e.config, "nudge", "profiles")+" does not exist: built-in profiles only",
			"warn  local: daemon: not running (no socket at "+sock+"): start it with `nudge serve`",
			"no check failed")
	})
	t.Run("ErrPermissions", func(t *testing.T) {
		e := newDoctorEnv(t)
		state := filepath.Join(e.state, "nudge")
		writeFile(t, filepath.Join(state, "nudge.db"), "")
		writeFile(t, filepath.Join(state, "token.key"), "00")
		for path, mode := range map[string]os.FileMode{state: 0o755, filepath.Join(state, "nudge.db"): 0o644, filepath.Join(state, "token.key"): 0o600} {
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
		}
		sockDir := filepath.Join(e.runtime, "nudge")
		if err := os.MkdirAll(sockDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(sockDir, 0o755); err != nil {
			t.Fatal(err)
		}
		failures := 3
		if os.Geteuid() == 0 { // root can plant a file owned by someone else
			writeFile(t, filepath.Join(state, "nudge.db.creates"), "")
			if err := os.Chown(filepath.Join(state, "nudge.db.creates"), 12345, 12345); err != nil {
				t.Fatal(err)
			}
			failures++
		}
		out, code := runDoctorCLI(t, "")
		if code != 1 {
			t.Fatalf("exit %d, want 1:\n%s", code, out)
		}
		wantLines(t, out,
			"FAIL  local: state dir "+state+" has mode 0755, others can reach into it: chmod 700 "+state,
			"FAIL  local: "+filepath.Join(state, "nudge.db")+" has mode 0644, others can read or write it: chmod 600 "+filepath.Join(state, "nudge.db"),
			"ok    local: state files mode 0600, yours: token.key",
			"FAIL  local: socket dir "+sockDir+" has mode 0755, others can reach into it: chmod 700 "+sockDir,
			fmt.Sprintf("nudge doctor: %d check(s) failed", failures))
		if os.Geteuid() == 0 {
			wantLines(t, out, "FAIL  local: "+filepath.Join(state, "nudge.db.creates")+" is owned by uid 12345, not you (uid 0): chown it")
		}
	})
	t.Run("ErrMalformedOverride", func(t *testing.T) {
		e := newDoctorEnv(t)
		bad := filepath.Join(e.config, "nudge", "packs", "codex.json")
		writeFile(t, bad, `{"busy": [`)
		writeFile(t, filepath.Join(e.config, "nudge", "profiles", "mine.json"), `{"launch": ["mine"]}`)
		out, code := runDoctorCLI(t, "")
		if code != 1 {
			t.Fatalf("exit %d, want 1:\n%s", code, out)
		}
		wantLines(t, out,
			"FAIL  local: pack overrides: load pack "+bad+": ",
			"ok    local: profile overrides: "+filepath.Join(e.config, "nudge", "profiles")+" read: mine.json",
			"warn  local: agent mine (profile mine) is not on PATH")
		if strings.Contains(out, "uses pack") {
			t.Errorf("a pack was called missing while the pack directory does not load:\n%s", out)
		}
	})
	t.Run("MissingPack", func(t *testing.T) {
		e := newDoctorEnv(t)
		writeFile(t, filepath.Join(e.config, "nudge", "profiles", "mine.json"), `{"launch": ["bash"]}`)
		out, code := runDoctorCLI(t, "")
		if code != 0 {
			t.Fatalf("exit %d, want 0:\n%s", code, out)
		}
		wantLines(t, out, `warn  local: profile mine uses pack "mine", which does not exist: its screen is never classified; add mine.json to `+
			filepath.Join(e.config, "nudge", "packs"))
	})
	t.Run("ErrOldTmux", func(t *testing.T) {
		e := newDoctorEnv(t)
		old := filepath.Join(e.config, "tmux31")
		writeFile(t, old, "#!/bin/sh\necho tmux 3.1c\n")
		if err := os.Chmod(old, 0o755); err != nil {
			t.Fatal(err)
		}
		out, code := runDoctorCLI(t, "", "--tmux", old)
		if code != 1 {
			t.Fatalf("exit %d, want 1:\n%s", code, out)
		}
		wantLines(t, out, "FAIL  local: tmux 3.1c is too old: nudge needs tmux 3.2 or newer")
	})
	t.Run("StaleSocket", func(t *testing.T) {
		newDoctorEnv(t)
		sock := shortSocketPath(t)
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		ln.Close()
		if err := os.Chmod(sock, 0o600); err != nil {
			t.Fatal(err)
		}
		out, code := runDoctorCLI(t, sock)
		if code != 0 {
			t.Fatalf("exit %d, want 0:\n%s", code, out)
		}
		wantLines(t, out, "warn  local: daemon: nothing listens on "+sock+" (a stale socket")
	})
	t.Run("ErrHungDaemon", func(t *testing.T) {
		newDoctorEnv(t)
		sock := shortSocketPath(t)
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		if err := os.Chmod(sock, 0o600); err != nil {
			t.Fatal(err)
		}
		go func() { // accepts, never answers
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
			}
		}()
		out, code := runDoctorCLI(t, sock)
		if code != 1 {
			t.Fatalf("exit %d, want 1:\n%s", code, out)
		}
		wantLines(t, out, "FAIL  local: daemon on "+sock+" did not answer within 5s", "1 check(s) failed")
	})
}

// shortSocketPath is a socket path short enough for sun_path, in a 0700 directory.
func shortSocketPath(t *testing.T) string {
	dir, err := os.MkdirTemp("", "nd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "d.sock")
}

// A daemon from the harness answers; its state and socket pass the permission checks, and
// the runtime's program is checked as in use.
func TestDoctorWithDaemon(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.StateDir = filepath.Join(cfg.StateDir, "state") // created by serve, 0700
	td := startDaemon(t, cfg)
	td.spawnShell("doc", "w", "bash", "--norc", "--noprofile")
	newDoctorEnv(t)
	out, code := runDoctorCLI(t, cfg.Socket, "--state-dir", cfg.StateDir)
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	wantLines(t, out,
		"ok    local: agent program bash: ",
		"ok    local: state dir "+cfg.StateDir+": mode 0700, yours",
		"ok    local: state files mode 0600, yours: nudge.db",
		"ok    local: socket "+cfg.Socket+": mode 0600, yours",
		"ok    local: daemon dev answers on "+cfg.Socket+": 1 runtime(s)")
}

// Doctor checks the directories the running daemon uses, not the defaults: a daemon on a
// state dir, profile and pack directories of its own, doctor run with no flag but its
// socket. Its state dir opened to others fails the check; before, doctor checked the
// default state dir (which did not exist: ok) and the default override directories.
// A directory given with a flag is checked as given, with a warning that the daemon
// uses another.
func TestDoctorChecksTheDaemonsOwnDirs(t *testing.T) {
	cfg := newTestConfig(t)
	base := t.TempDir()
	cfg.StateDir = filepath.Join(base, "own-state") // created by serve, 0700
	cfg.ProfileDir, cfg.PackDir = filepath.Join(base, "own-profiles"), filepath.Join(base, "own-packs")
	writeFile(t, filepath.Join(cfg.ProfileDir, "mine.json"), `{"launch":["bash","--norc","--noprofile"],"allowed_launchers":["bash"],"pack":"shell"}`)
	writeFile(t, filepath.Join(cfg.PackDir, "extra.json"), `{"busy":["crunching"],"composer":{"prompt":"^>> "}}`)
	startDaemon(t, cfg)
	env := newDoctorEnv(t) // defaults elsewhere: $XDG_STATE_HOME/nudge, $XDG_CONFIG_HOME/nudge/...

	out, code := runDoctorCLI(t, cfg.Socket)
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	wantLines(t, out,
		"ok    local: state dir "+cfg.StateDir+": mode 0700, yours",
		"ok    local: state files mode 0600, yours: nudge.db",
		"ok    local: profile overrides: "+cfg.ProfileDir+" read: mine.json",
		"ok    local: pack overrides: "+cfg.PackDir+" read: extra.json",
		"its own state dir and override directories were checked")
	if strings.Contains(out, env.state) || strings.Contains(out, env.config) {
		t.Errorf("doctor checked a default directory, not the daemon's:\n%s", out)
	}

	if err := os.Chmod(cfg.StateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, code = runDoctorCLI(t, cfg.Socket)
	if code != 1 {
		t.Fatalf("exit %d with the daemon's state dir open to others, want 1:\n%s", code, out)
	}
	wantLines(t, out, "FAIL  local: state dir "+cfg.StateDir+" has mode 0755")
	if err := os.Chmod(cfg.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}

	other := t.TempDir()
	out, code = runDoctorCLI(t, cfg.Socket, "--pack-dir", other)
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	wantLines(t, out,
		"ok    local: pack overrides: "+other+" read: no *.json files",
		"warn  local: pack overrides: "+other+" was checked as given, but the daemon uses "+cfg.PackDir,
		"ok    local: profile overrides: "+cfg.ProfileDir+" read: mine.json")
}
