package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/demoagent"
)

// demoDaemon is a daemon whose launch word "nudge" runs a nudge built from this tree
// (the test binary is no nudge), so that `spawn --agent demo` runs the real demo agent.
func demoDaemon(t *testing.T) *testDaemon {
	t.Helper()
	cfg := newTestConfig(t)
	cfg.Panes.Self = buildWatchBinary(t)
	return startDaemon(t, cfg)
}

// TestDemoAgentWholeLoop: the demo agent shows the loop a first run should see, on real
// tmux: spawned by `nudge spawn --agent demo`, it gets ready, takes a trigger, and its
// session record acks it and gives the reply (`trigger --wait` exits 0 with the reply);
// a prompt that asks raises a dialog the detector reads (NEEDS_CONFIRMATION, the dialog
// as data) and `nudge approve` answers it, after which the reply says so.
func TestDemoAgentWholeLoop(t *testing.T) {
	t.Parallel()
	td := demoDaemon(t)
	dir := td.cfg.Panes.Roots[0]
	out, errOut, code := td.runCLI("spawn", "--workspace", "demo", "--role", "helper", "--agent", "demo", "--dir", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("spawn --agent demo: %d %s%s", code, out, errOut)
	}
	var rt runtimeView
	if err := json.Unmarshal([]byte(out), &rt); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" && r.Readiness == nudge.Ready })

	out, errOut, code = td.runCLI("trigger", "--workspace", "demo", "--agent", "helper", "--id", "demo-1",
		"--wait-for", "reply", "-o", "json", "Say hello to th_42.")
	var tr nudge.Trigger
	if code != 0 || json.Unmarshal([]byte(out), &tr) != nil || tr.State != nudge.StateAcked || !strings.Contains(tr.Reply, "Say hello to th_42.") {
		t.Fatalf("trigger --wait-for reply: %d %+v\n%s%s\n%s", code, tr, out, errOut, td.tmux("capture-pane", "-p", "-t", rt.PaneID))
	}
	if _, err := os.Stat(filepath.Join(dir, demoagent.RecordDir)); err != nil {
		t.Errorf("no record folder: %v", err)
	}

	// A prompt that asks: a dialog, answered by approve.
	if _, err := td.trigger(map[string]any{"trigger_id": "demo-2", "workspace": "demo", "agent": "helper", "prompt": "Please ask before you touch anything."}); err != nil {
		t.Fatal(err)
	}
	asking := td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Readiness == nudge.NeedsConfirmation && r.Dialog != nil })
	if asking.Dialog.Command != "touch demo.txt" || asking.Dialog.ApproveKey != "1" {
		t.Fatalf("dialog: %+v", asking.Dialog)
	}
	if out, errOut, code := td.runCLI("approve", rt.RuntimeID, "--reason", "the demo", "-o", "table"); code != 0 || !strings.HasPrefix(out, "answered "+rt.RuntimeID) {
		t.Fatalf("approve: %d %s%s", code, out, errOut)
	}
	got := td.waitTrigger("demo-2", func(t nudge.Trigger) bool { return t.Reply != "" })
	if got.State != nudge.StateAcked || !strings.HasPrefix(got.Reply, "Approved") {
		t.Fatalf("demo-2: %+v", got)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Readiness == nudge.Ready && r.Dialog == nil })
}
