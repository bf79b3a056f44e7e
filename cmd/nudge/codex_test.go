package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nudgehq/nudge/detector"
	"github.com/nudgehq/nudge/store"
)

// codexBinary finds the real Codex CLI: $NUDGE_TEST_CODEX, else the npm cache that
// .ci/test fills, else PATH.
func codexBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("NUDGE_TEST_CODEX"); p != "" {
		return p
	}
	if p, err := filepath.Abs("../../.cache/npm/node_modules/.bin/codex"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("codex"); err == nil {
		return p
	}
	t.Skip("Codex CLI not installed (.ci/test installs @openai/codex into .cache/npm)")
	return ""
}

// TestCodexTwentyTriggersAllSubmitted drives the real Codex TUI: logged in with a dummy
// key, the folder trusted, 20 triggers in a row must each leave the composer.
func TestCodexTwentyTriggersAllSubmitted(t *testing.T) {
	codex := codexBinary(t)
	cfg := newTestConfig(t)
	home := t.TempDir()
	// Codex detaches an app-server daemon (setsid) that outlives its pane: end every
	// process whose command line lives under this test's home, by pid. Registered
	// first, so it runs after the daemon and the tmux server are gone.
	t.Cleanup(func() { killProcessesUnder(t, home) })
	codexHome := filepath.Join(home, ".codex")
	os.MkdirAll(codexHome, 0o700)
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", codexHome)
	t.Setenv("PATH", filepath.Dir(codex)+string(os.PathListSeparator)+os.Getenv("PATH"))
	login := exec.Command(codex, "login", "--with-api-key")
	login.Stdin = strings.NewReader("sk-nudge-test-dummy\n")
	if out, err := login.CombinedOutput(); err != nil {
		t.Fatalf("codex login: %v: %s", err, out)
	}
	proj := cfg.Roots[0]
	trust := fmt.Sprintf("[projects.%q]\ntrust_level = \"trusted\"\n", proj)
	os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(trust), 0o600)
	cfg.AckTimeout = time.Minute // no network: Codex cannot answer; this test is about submission
	cfg.RateLimit = 1000         // 20 in a row is over the default 10/min
	td := startDaemon(t, cfg)

	var rt runtimeView
	if err := td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: "cx", Role: "dev", Agent: "codex", Dir: proj}, &rt); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" && r.Readiness == "READY" })
	for i := range 20 {
		id := fmt.Sprintf("cx-%02d", i)
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "cx", "agent": "dev", "prompt": fmt.Sprintf("task %d: say hello", i)}); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		got := td.waitTrigger(id, func(t store.Trigger) bool { return t.State == "submitted" || t.Closed })
		if got.State != "submitted" {
			t.Fatalf("%s: not submitted: %+v\nscreen:\n%s", id, got, td.tmux("capture-pane", "-p", "-t", rt.PaneID))
		}
	}
	// Nothing is left typed but unsent in the composer.
	packs, err := detector.LoadPacks("")
	if err != nil {
		t.Fatal(err)
	}
	screen := td.tmux("capture-pane", "-p", "-e", "-t", rt.PaneID)
	if c := detector.Classify(packs["codex"], screen); strings.Contains(c.Draft, "BRIDGE_TRIGGER") {
		t.Fatalf("composer still holds a prompt: %q\n%s", c.Draft, screen)
	}
}

// killProcessesUnder ends the processes whose command line mentions dir (the test's own
// temp directory): SIGTERM, then SIGKILL after a grace period. (As in package detector's
// live Codex test.)
func killProcessesUnder(t *testing.T, dir string) {
	t.Helper()
	find := func() []int {
		var pids []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
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
