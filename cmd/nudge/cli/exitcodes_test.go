package cli

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
	// A failed trigger exits 1 from trigger and from receipt alike. (The CLI refuses a
	// trigger to no runtime before sending it, exit 1; the API stores it, failed.)
	out, errOut, code = td.runCLI("trigger", "--workspace", "w1", "--agent", "nobody", "--id", "lost", "--wait", "--wait-timeout", "30s", "echo lost")
	if code != 1 || out != "" || !strings.Contains(errOut, "UNMANAGED_RUNTIME") {
		t.Fatalf("trigger to no runtime: exit %d (want 1, nothing sent)\n%s%s", code, out, errOut)
	}
	if tr, err := td.trigger(map[string]any{"trigger_id": "lost", "workspace": "w1", "agent": "nobody", "prompt": "echo lost"}); err != nil || tr.State != nudge.StateFailed {
		t.Fatalf("API trigger to no runtime: %+v %v (want failed)", tr, err)
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

// TestEveryRecordCommandTakesOutput: the commands that print a record take -o json and
// -o table like the others (before, deregister, heartbeat, unblock, schedule rm, doctor and
// version refused -o as an unknown flag).
func TestEveryRecordCommandTakesOutput(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rt := td.spawnShell("w1", "sh")
	asJSON := func(args ...string) map[string]any {
		t.Helper()
		out, errOut, code := td.runCLI(append(args, "-o", "json")...)
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil || (code != 0 && args[0] != "doctor") {
			t.Fatalf("nudge %s -o json: exit %d, %v\n%s%s", strings.Join(args, " "), code, err, out, errOut)
		}
		return v
	}
	table := func(args ...string) {
		t.Helper()
		if out, errOut, code := td.runCLI(append(args, "-o", "table")...); code != 0 || !strings.HasPrefix(out, "FIELD") {
			t.Fatalf("nudge %s -o table: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	if v := asJSON("version"); v["version"] == "" || v["version"] == nil {
		t.Fatalf("version -o json: %v", v)
	}
	if v := asJSON("doctor"); v["checks"] == nil {
		t.Fatalf("doctor -o json: %v", v)
	}
	if v := asJSON("heartbeat", rt.RuntimeID, "--cursor", "c1"); v["runtime_id"] != rt.RuntimeID {
		t.Fatalf("heartbeat -o json: %v", v)
	}
	table("heartbeat", rt.RuntimeID, "--cursor", "c2")
	asJSON("unblock", "th-none")
	var sc api.Schedule
	out, errOut, code := td.runCLI("schedule", "add", "--workspace", "w1", "--agent", "sh", "--every", "10m", "echo tick")
	if code != 0 || json.Unmarshal([]byte(out), &sc) != nil {
		t.Fatalf("schedule add: exit %d %s %s", code, out, errOut)
	}
	asJSON("schedule", "rm", sc.ScheduleID)
	if v := asJSON("deregister", rt.RuntimeID, "--reason", "done"); v["runtime_id"] != rt.RuntimeID {
		t.Fatalf("deregister -o json: %v", v)
	}
}
