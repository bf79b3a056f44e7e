package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
	"github.com/nudgehq/nudge/cmd/nudge/standin"
)

// agentBinary finds a real agent CLI: $env, else the npm cache that .ci/test fills, else
// PATH; the test is skipped without it.
func agentBinary(t *testing.T, name, env, pkg string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := filepath.Abs("../../../.cache/npm/node_modules/.bin/" + name); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Skipf("%s not installed (.ci/test installs %s into .cache/npm)", name, pkg)
	return ""
}

// agentEnv prepares a test for a real agent CLI: a private HOME (whose processes end
// with the test), the CLI's directory first on PATH, and a daemon config for a CLI that
// has no network to answer with (the tests are about input). It returns the config and
// the HOME to put the CLI's own settings in.
func agentEnv(t *testing.T, bin string) (daemon.Config, string) {
	t.Helper()
	cfg := newTestConfig(t)
	home := t.TempDir()
	t.Cleanup(func() { killProcessesUnder(t, home) })
	t.Cleanup(func() { // a CLI that never came up may say why in its own log (OpenCode's)
		if !t.Failed() {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(home, ".local", "share", "*", "log", "*.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("%s (its end):\n%s", filepath.Base(l), b[max(0, len(b)-2000):])
		}
	})
	t.Setenv("HOME", home)
	t.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cfg.Inject.AckTimeout = time.Minute
	cfg.Inject.RateLimit = 1000
	return cfg, home
}

// spawnAgent starts a managed runtime of the agent profile in workspace ws (role dev)
// and waits until done says so (nil: running with its composer READY).
func (td *testDaemon) spawnAgent(ws, agent string, done func(runtimeView) bool) runtimeView {
	td.t.Helper()
	var rt runtimeView
	if err := td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: ws, Role: "dev", Agent: agent, Dir: td.cfg.Panes.Roots[0]}, &rt); err != nil {
		td.t.Fatal(err)
	}
	if done == nil {
		done = func(r runtimeView) bool { return r.Status == "ready" && r.Readiness == "READY" }
	}
	// A node or bun TUI takes a while to start on a loaded machine (OpenCode showed an
	// empty screen for more than 20 s while the CI's other tests ran).
	return td.waitRuntimeFor(rt.RuntimeID, 90*time.Second, done)
}

// TestOpenCodeHumanDraftHoldsTrigger drives the real OpenCode TUI: a human's
// half-written text in its composer holds a trigger (deferred, OPERATOR_BUSY, the draft
// read from the real screen) instead of typing into it; once the human clears it, the
// trigger is typed and leaves the composer.
func TestOpenCodeHumanDraftHoldsTrigger(t *testing.T) {
	testDraftHoldsTrigger(t, "opencode", agentBinary(t, "opencode", "NUDGE_TEST_OPENCODE", "opencode-ai"))
}

// TestPiHumanDraftHoldsTrigger: the same with the real Pi coding agent.
func TestPiHumanDraftHoldsTrigger(t *testing.T) {
	testDraftHoldsTrigger(t, "pi", agentBinary(t, "pi", "NUDGE_TEST_PI", "@mariozechner/pi-coding-agent"))
}

func testDraftHoldsTrigger(t *testing.T, agent, bin string) {
	cfg, home := agentEnv(t, bin)
	model := silentModel(t, home, cfg.Panes.Roots[0], agent)
	cfg.Monitor.QuietWindow = time.Second
	cfg.Inject.DeferRecheck = 300 * time.Millisecond
	td := startDaemon(t, cfg)
	rt := td.spawnAgent("oc", agent, nil)

	draft := "half written by a human"
	td.tmux("send-keys", "-t", rt.PaneID, "-l", draft)
	td.waitPane(rt.PaneID, "the human's draft", func(s string) bool { return strings.Contains(s, draft) })
	time.Sleep(cfg.Monitor.QuietWindow + 200*time.Millisecond) // their keys are quiet; the draft stays
	if _, err := td.trigger(map[string]any{"trigger_id": "oc-1", "workspace": "oc", "agent": "dev", "prompt": "nudge's task"}); err != nil {
		t.Fatal(err)
	}
	got := td.waitTrigger("oc-1", func(t nudge.Trigger) bool { return t.State != "queued" })
	if got.State != "deferred" || got.ErrorCode != "OPERATOR_BUSY" || !strings.Contains(got.Message, "draft") {
		t.Fatalf("oc-1 with a draft in the composer: %+v\nscreen:\n%s", got, td.tmux("capture-pane", "-p", "-t", rt.PaneID))
	}
	time.Sleep(time.Second)
	if screen := td.tmux("capture-pane", "-p", "-t", rt.PaneID); strings.Contains(screen, "BRIDGE_TRIGGER") {
		t.Fatalf("typed into the human's draft:\n%s", screen)
	}
	// The human deletes the draft: the trigger goes through.
	for range len(draft) {
		td.tmux("send-keys", "-t", rt.PaneID, "BSpace")
	}
	got = td.waitTrigger("oc-1", func(t nudge.Trigger) bool { return t.State == "submitted" || t.Closed })
	if got.SubmittedAt == nil || got.State != "submitted" && got.State != "acked" {
		// Acked at once when the agent's record shows the prompt (OpenCode's does as it
		// takes it): submitted on the way.
		t.Fatalf("oc-1 after the draft was cleared: %+v\nscreen:\n%s", got, td.tmux("capture-pane", "-p", "-t", rt.PaneID))
	}
	// The model got nudge's prompt, once, and never the human's words.
	deadline := time.Now().Add(30 * time.Second)
	for standin.Count(model.Requests(), "oc-1") == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	for _, r := range model.Requests() {
		if strings.Contains(r.Prompt, draft) {
			t.Fatalf("the model got the human's draft: %q", r.Prompt)
		}
	}
	if n := standin.Count(model.Requests(), "oc-1"); n != 1 {
		t.Fatalf("the model got oc-1 %d times, want 1", n)
	}
}
