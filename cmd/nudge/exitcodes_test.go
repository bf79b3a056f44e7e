package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// TestExitCodes holds trigger and receipt to the one table: 0 the state asked for was
// reached, 1 failed or refused, 2 usage, 3 still pending when the wait ended.
func TestExitCodes(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rt := td.spawnShell("w1", "sh")
	if _, errOut, code := td.runCLI("pause", rt.RuntimeID, "--reason", "hold the triggers"); code != 0 {
		t.Fatalf("pause: %d %s", code, errOut)
	}
	receipt := func(out string) api.Trigger {
		t.Helper()
		var tr api.Trigger
		if err := json.Unmarshal([]byte(out), &tr); err != nil {
			t.Fatalf("not a receipt: %v\n%s", err, out)
		}
		return tr
	}
	// A paused runtime holds the trigger: the wait ends first.
	out, errOut, code := td.runCLI("trigger", "--workspace", "w1", "--agent", "sh", "--id", "held", "--wait", "--wait-timeout", "1s", "echo held")
	if code != 3 || receipt(out).Closed || !strings.Contains(errOut, "still") {
		t.Fatalf("trigger --wait on a held trigger: exit %d (want 3), %s\n%s", code, errOut, out)
	}
	if out, errOut, code = td.runCLI("receipt", "held", "--wait", "300ms"); code != 3 || receipt(out).TriggerID != "held" {
		t.Fatalf("receipt --wait on a held trigger: exit %d (want 3), %s", code, errOut)
	}
	if _, errOut, code = td.runCLI("receipt", "held"); code != 0 {
		t.Fatalf("receipt without a wait: exit %d (want 0), %s", code, errOut)
	}
	// A failed trigger exits 1 from trigger and from receipt alike.
	out, _, code = td.runCLI("trigger", "--workspace", "w1", "--agent", "nobody", "--id", "lost", "--wait", "--wait-timeout", "30s", "echo lost")
	if tr := receipt(out); tr.State != nudge.StateFailed || code != 1 {
		t.Fatalf("trigger to no runtime: exit %d, state %s (want failed, exit 1)", code, tr.State)
	}
	if _, _, code = td.runCLI("receipt", "lost"); code != 1 {
		t.Fatalf("receipt of a failed trigger: exit %d (want 1)", code)
	}
	// The same id with another request: refused, exit 1, the message names the field.
	if _, errOut, code = td.runCLI("trigger", "--workspace", "w1", "--agent", "sh", "--id", "held", "echo other"); code != 1 || !strings.Contains(errOut, "IDEMPOTENCY_CONFLICT") || !strings.Contains(errOut, "prompt") {
		t.Fatalf("reused id, other prompt: exit %d, %s", code, errOut)
	}
	if _, _, code = td.runCLI("trigger", "--workspace", "w1"); code != 2 {
		t.Fatalf("usage: exit %d (want 2)", code)
	}
}

// TestPerCallFlagsNotFromEnvironment: NUDGE_ID (like every flag naming one call's own
// value) is not read, so a stray export does not make every trigger reuse one id.
func TestPerCallFlagsNotFromEnvironment(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	td.spawnShell("w1", "sh")
	t.Setenv("NUDGE_ID", "fixed")
	t.Setenv("NUDGE_THREAD", "th-env")
	t.Setenv("NUDGE_REASON", "from the environment")
	ids := map[string]bool{}
	for _, p := range []string{"echo one", "echo two"} {
		out, errOut, code := td.runCLI("trigger", "--workspace", "w1", "--agent", "sh", p)
		if code != 0 {
			t.Fatalf("trigger %q: exit %d %s", p, code, errOut)
		}
		var tr api.Trigger
		if err := json.Unmarshal([]byte(out), &tr); err != nil {
			t.Fatal(err)
		}
		if tr.TriggerID == "fixed" || tr.ThreadID != "" || tr.Reason != "" {
			t.Fatalf("trigger took a per-call value from the environment: %+v", tr)
		}
		ids[tr.TriggerID] = true
	}
	if len(ids) != 2 {
		t.Fatalf("two triggers, ids %v", ids)
	}
}
