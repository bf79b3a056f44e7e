package detector

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// liveCodexBinary returns the Codex CLI to run live: $NUDGE_TEST_CODEX, else the
// copy npm installed under the module's .cache/npm.
func liveCodexBinary(t *testing.T) string {
	if p := os.Getenv("NUDGE_TEST_CODEX"); p != "" {
		return p
	}
	p, err := filepath.Abs(filepath.Join("..", ".cache", "npm", "node_modules", ".bin", "codex"))
	if err == nil {
		if _, err = os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("live Codex test skipped: set NUDGE_TEST_CODEX to a codex binary, or run " +
		"`npm install --prefix .cache/npm @openai/codex@0.169.0` in the module root")
	return ""
}

// livePane is one pane on a private tmux server.
type livePane struct {
	t      *testing.T
	socket string
}

func (lp *livePane) tmux(args ...string) string {
	lp.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", lp.socket}, args...)...).CombinedOutput()
	if err != nil {
		lp.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

func (lp *livePane) capture() string { return lp.tmux("capture-pane", "-p", "-e", "-t", "t") }

// waitFor polls captures until ok accepts the classification or the deadline
// passes; it returns the last classification.
func (lp *livePane) waitFor(what string, p *Pack, ok func(Classification, string) bool) Classification {
	lp.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var c Classification
	var screen string
	for time.Now().Before(deadline) {
		screen = lp.capture()
		if c = Classify(p, screen); ok(c, screen) {
			return c
		}
		time.Sleep(250 * time.Millisecond)
	}
	lp.t.Fatalf("%s: not seen; last classification %+v; screen:\n%s", what, c, nudge.Redact(screen))
	return c
}

// TestLiveCodex runs the real Codex TUI in a private tmux server with a
// throw-away HOME and CODEX_HOME and classifies live captures.
func TestLiveCodex(t *testing.T) {
	codex := liveCodexBinary(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed (Codex asks about trust only in a git repository)")
	}
	pack := defaultPacks(t)["codex"]
	tmp := t.TempDir()
	home, codexHome, proj := filepath.Join(tmp, "home"), filepath.Join(tmp, "codex"), filepath.Join(tmp, "proj")
	for _, d := range []string{home, codexHome, proj} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"HOME=" + home, "CODEX_HOME=" + codexHome, "TERM=xterm-256color"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "git", "init", "-q", proj).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	login := exec.CommandContext(ctx, codex, "login", "--with-api-key")
	login.Env = append(os.Environ(), env...)
	login.Stdin = strings.NewReader("sk-nudge-test-dummy-key\n")
	if out, err := login.CombinedOutput(); err != nil {
		t.Fatalf("codex login: %v: %s", err, out)
	}

	lp := &livePane{t: t, socket: fmt.Sprintf("nudge-t-detector-%d-%d", os.Getpid(), time.Now().UnixNano())}
	args := append([]string{"-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "120", "-y", "40", "-c", proj, "env"}, env...)
	lp.tmux(append(args, codex)...)
	sockPath := strings.TrimSpace(lp.tmux("display-message", "-p", "-t", "t", "#{socket_path}"))
	t.Cleanup(func() {
		exec.Command("tmux", "-L", lp.socket, "kill-server").Run()
		// tmux 3.3a leaves the socket file behind after kill-server.
		if fi, err := os.Lstat(sockPath); err == nil && fi.Mode()&os.ModeSocket != 0 {
			os.Remove(sockPath)
		}
		// Codex detaches an app-server daemon (setsid) that outlives the pane;
		// it runs from under this test's CODEX_HOME, which names it uniquely.
		killProcessesUnder(t, codexHome)
	})

	lp.waitFor("trust screen", pack, func(c Classification, s string) bool {
		return c.State == nudge.NeedsConfirmation && strings.Contains(s, "Trust this folder")
	})
	lp.tmux("send-keys", "-t", "t", "Enter")
	// Under load Codex draws the dialog before it reads keys, and that Enter is lost: it
	// is sent again (every 2 s) while the dialog stays.
	sent := time.Now()
	lp.waitFor("idle composer", pack, func(c Classification, s string) bool {
		if strings.Contains(s, "Trust this folder") && time.Since(sent) > 2*time.Second {
			lp.tmux("send-keys", "-t", "t", "Enter")
			sent = time.Now()
		}
		return c.State == nudge.Ready && c.Draft == "" && c.Confident
	})
	const draft = "please refactor the retry loop"
	lp.tmux("send-keys", "-t", "t", "-l", draft)
	c := lp.waitFor("draft", pack, func(c Classification, _ string) bool { return c.Draft != "" && c.Draft == draft })
	if c.State != nudge.Ready {
		t.Errorf("with a draft: state %s, want READY", c.State)
	}
	// Submitted, the prompt leaves the composer. Without network Codex keeps
	// reconnecting (BUSY); with network the dummy key fails fast (ERROR).
	lp.tmux("send-keys", "-t", "t", "Enter")
	lp.waitFor("submitted turn", pack, func(c Classification, _ string) bool {
		return (c.State == nudge.Busy || c.State == nudge.ErrorState) && c.Draft == ""
	})
}

// killProcessesUnder ends the processes whose command line mentions dir (the
// test's own temp directory): SIGTERM, then SIGKILL after a grace period.
func killProcessesUnder(t *testing.T, dir string) {
	t.Helper()
	find := func() []int {
		var pids []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			var pid int
			if _, err := fmt.Sscan(e.Name(), &pid); err != nil || pid == os.Getpid() {
				continue
			}
			cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err == nil && strings.Contains(string(cmd), dir) {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	sig := syscall.SIGTERM
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		pids := find()
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			syscall.Kill(pid, sig)
		}
		time.Sleep(200 * time.Millisecond)
		if time.Until(deadline) < 10*time.Second {
			sig = syscall.SIGKILL
		}
	}
	t.Errorf("processes under %s still running: %v", dir, find())
}
