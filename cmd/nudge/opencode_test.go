package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/store"
)

// opencodeBinary finds the real OpenCode CLI: $NUDGE_TEST_OPENCODE, else the npm cache
// that .ci/test fills, else PATH.
func opencodeBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("NUDGE_TEST_OPENCODE"); p != "" {
		return p
	}
	if p, err := filepath.Abs("../../.cache/npm/node_modules/.bin/opencode"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("opencode"); err == nil {
		return p
	}
	t.Skip("OpenCode not installed (.ci/test installs opencode-ai into .cache/npm)")
	return ""
}

// TestOpenCodeHumanDraftHoldsTrigger drives the real OpenCode TUI: a human's
// half-written text in its composer holds a trigger (deferred, OPERATOR_BUSY, the draft
// read from the real screen) instead of typing into it; once the human clears it, the
// trigger is typed and leaves the composer.
func TestOpenCodeHumanDraftHoldsTrigger(t *testing.T) {
	opencode := opencodeBinary(t)
	cfg := newTestConfig(t)
	home := t.TempDir()
	t.Cleanup(func() { killProcessesUnder(t, home) })
	t.Setenv("HOME", home)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-nudge-test-dummy")
	t.Setenv("OPENCODE_DISABLE_AUTOUPDATE", "1")
	t.Setenv("PATH", filepath.Dir(opencode)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cfg.AckTimeout = time.Minute // no network: OpenCode cannot answer; the test is about input
	cfg.QuietWindow = time.Second
	cfg.DeferRecheck = 300 * time.Millisecond
	td := startDaemon(t, cfg)
	var rt runtimeView
	if err := td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: "oc", Role: "dev", Agent: "opencode", Dir: td.cfg.Roots[0]}, &rt); err != nil {
		t.Fatal(err)
	}
	rt = td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" && r.Readiness == "READY" })

	draft := "half written by a human"
	td.tmux("send-keys", "-t", rt.PaneID, "-l", draft)
	td.waitPane(rt.PaneID, "the human's draft", func(s string) bool { return strings.Contains(s, draft) })
	time.Sleep(cfg.QuietWindow + 200*time.Millisecond) // their keys are quiet; the draft stays
	if _, err := td.trigger(map[string]any{"trigger_id": "oc-1", "workspace": "oc", "agent": "dev", "prompt": "nudge's task"}); err != nil {
		t.Fatal(err)
	}
	got := td.waitTrigger("oc-1", func(t store.Trigger) bool { return t.State != "queued" })
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
	got = td.waitTrigger("oc-1", func(t store.Trigger) bool { return t.State == "submitted" || t.Closed })
	if got.State != "submitted" {
		t.Fatalf("oc-1 after the draft was cleared: %+v\nscreen:\n%s", got, td.tmux("capture-pane", "-p", "-t", rt.PaneID))
	}
	for _, r := range td.audit("oc-1") {
		t.Logf("%s %s %s", r.Time.Format("15:04:05.000"), r.Event, r.Reason)
	}
}
