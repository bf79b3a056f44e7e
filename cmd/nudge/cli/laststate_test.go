package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// With the daemon down, status and ls show the last state the store holds, marked stale
// with its time, and exit 1; a daemon started afterwards opens the store at once.
func TestStatusWithDaemonDown(t *testing.T) {
	cfg := newTestConfig(t)
	td := startDaemon(t, cfg)
	rt := td.spawnShell("w", "rev", "cat")
	if _, err := td.trigger(map[string]any{"trigger_id": "down-1", "workspace": "w", "agent": "rev", "prompt": "hello"}); err != nil {
		t.Fatal(err)
	}
	td.waitTrigger("down-1", closed)
	td.stop()

	sd := "--state-dir=" + cfg.StateDir
	out, errOut, code := td.runCLI("status", sd)
	if code != 1 || !strings.Contains(out, "rev") || !strings.Contains(out, "down-1") ||
		!strings.Contains(errOut, "STALE: the daemon is not running") || !strings.Contains(errOut, "nudge serve") {
		t.Errorf("status: exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = td.runCLI("status", "--short", sd)
	if code != 1 || !strings.HasPrefix(out, "(stale ") || !strings.Contains(out, "[rev: ") {
		t.Errorf("status --short: exit %d %q", code, out)
	}
	out, _, code = td.runCLI("status", "-o", "json", sd)
	var rows []statusRow
	if code != 1 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 || rows[0].StaleAsOf == nil ||
		rows[0].LastTrigger == nil || rows[0].LastTrigger.TriggerID != "down-1" {
		t.Errorf("status -o json: exit %d %s", code, out)
	}
	out, errOut, code = td.runCLI("ls", sd)
	if code != 1 || !strings.Contains(out, rt.RuntimeID) || !strings.Contains(errOut, "STALE") {
		t.Errorf("ls: exit %d\n%s\n%s", code, out, errOut)
	}

	// The reads took no lock from the daemon that starts now.
	td2 := startDaemon(t, cfg)
	if out, _, code := td2.runCLI("status", sd); code != 0 || !strings.Contains(out, "rev") {
		t.Errorf("status with the daemon back: exit %d %s", code, out)
	}
}
