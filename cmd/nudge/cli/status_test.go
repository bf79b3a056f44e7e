package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
)

func TestShortStatus(t *testing.T) {
	rv := func(ws, role, status, readiness string, busy bool, depth int) runtimeView {
		return runtimeView{Runtime: nudge.Runtime{WorkspaceID: ws, Role: role, Status: nudge.Status(status), Readiness: nudge.Readiness(readiness), OperatorBusy: busy}, QueueDepth: depth}
	}
	tests := []struct {
		rts     []runtimeView
		qualify bool
		want    string
	}{
		{nil, false, ""},
		{[]runtimeView{rv("w", "reviewer", "ready", "READY", false, 0), rv("w", "executioner", "triggering", "BUSY", false, 0)},
			false, "[executioner: BUSY] [reviewer: READY]"},
		{[]runtimeView{rv("w", "a", "awaiting_ack", "NEEDS_CONFIRMATION", true, 2)}, false, "[a: NEEDS_CONFIRMATION* +2]"},
		{[]runtimeView{rv("w", "a", "failed", "READY", false, 0), rv("w", "b", "offline", "", false, 0)}, false, "[a: FAILED] [b: OFFLINE]"},
		{[]runtimeView{rv("w", "a", "paused", "READY", false, 0), rv("w", "b", "ready", "", false, 0)}, false, "[a: PAUSED] [b: UNKNOWN]"},
		{[]runtimeView{rv("y", "a", "ready", "READY", false, 0), rv("x", "b", "ready", "BUSY", false, 0)}, true, "[x/b: BUSY] [y/a: READY]"},
		{[]runtimeView{rv("w", "gone", "deregistered", "", false, 0)}, false, ""},
	}
	for i, tt := range tests {
		if got := shortStatus(tt.rts, tt.qualify); got != tt.want {
			t.Errorf("#%d: got %q, want %q", i, got, tt.want)
		}
	}
}

// runCLI runs a client subcommand in-process against td.
func (td *testDaemon) runCLI(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	env := &cliEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string {
		if k == "NUDGE_SOCKET" {
			return td.cfg.Socket
		}
		return os.Getenv(k)
	}}
	code := run(context.Background(), env, args)
	return out.String(), errb.String(), code
}

func (td *testDaemon) statusRight(ws string) string {
	return strings.TrimSpace(td.tmux("show-options", "-v", "-t", "=agents_"+ws+":", "status-right"))
}

// waitStatusRight polls the session option (the test polls; the daemon does not) until it
// shows the line want computes from the runtimes as they are now: a pane's readiness may
// move while the test waits, and the bar follows it.
func (td *testDaemon) waitStatusRight(ws string, want func() string) time.Duration {
	td.t.Helper()
	start := time.Now()
	var got, w string
	for time.Since(start) < 15*time.Second {
		w = want()
		if got = td.statusRight(ws); got == w {
			return time.Since(start)
		}
		time.Sleep(10 * time.Millisecond)
	}
	td.t.Fatalf("status-right of agents_%s = %q, want %q", ws, got, w)
	return 0
}

func TestStatusLineFollowsStateChanges(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rev := td.spawnShell("sl", "reviewer", "cat")
	exe := td.spawnShell("sl", "executioner", "cat")
	line := func() string {
		return shortStatus([]runtimeView{td.get(rev.RuntimeID), td.get(exe.RuntimeID)}, false)
	}
	if l := line(); !strings.Contains(l, "[reviewer: ") || !strings.Contains(l, "[executioner: ") {
		t.Fatalf("short status %q", l)
	}
	td.waitStatusRight("sl", line)

	// A state change: pausing the reviewer shows on the bar without anything polling.
	if _, _, code := td.runCLI("pause", rev.RuntimeID); code != 0 {
		t.Fatal("pause failed")
	}
	if l := line(); !strings.Contains(l, "[reviewer: PAUSED]") {
		t.Fatalf("short status after pause %q", l)
	}
	took := td.waitStatusRight("sl", line)
	if !strings.Contains(td.statusRight("sl"), "[reviewer: PAUSED]") {
		t.Fatalf("bar after pause %q", td.statusRight("sl"))
	}
	t.Logf("status-right followed the pause in %v", took)

	if _, _, code := td.runCLI("resume", rev.RuntimeID); code != 0 {
		t.Fatal("resume failed")
	}
	td.waitStatusRight("sl", line)
}

func (td *testDaemon) get(id string) runtimeView {
	td.t.Helper()
	var rt runtimeView
	if err := td.c.do(context.Background(), "GET", "/v1/runtimes/"+id, nil, &rt); err != nil {
		td.t.Fatal(err)
	}
	return rt
}

func TestStatusCommand(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rt, file := rawCat(t, td, "st", "rev")
	td.spawnShell("st", "exe", "cat")
	if _, err := td.trigger(map[string]any{"trigger_id": "st-1", "workspace": "st", "agent": "rev", "prompt": "hi"}); err != nil {
		t.Fatal(err)
	}
	td.waitTrigger("st-1", closed)
	readUntil(t, file, func(s string) bool { return strings.Contains(s, "hi") })

	out, errOut, code := td.runCLI("status")
	if code != 0 {
		t.Fatalf("status: %d %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "WORKSPACE") || !strings.Contains(lines[0], "LAST TRIGGER") {
		t.Fatalf("header %q", lines[0])
	}
	var revLine string
	for _, l := range lines {
		if strings.HasPrefix(l, "st ") && strings.Contains(l, " rev ") {
			revLine = l
		}
	}
	if !strings.Contains(revLine, rt.PaneID) || !strings.Contains(revLine, "st-1") || !strings.Contains(revLine, "acked/delivered") {
		t.Fatalf("rev row %q in\n%s", revLine, out)
	}

	out, _, code = td.runCLI("status", "--short")
	if code != 0 || !strings.HasPrefix(out, "[exe: ") || !strings.Contains(out, "] [rev: ") {
		t.Fatalf("--short: %d %q", code, out)
	}

	out, _, code = td.runCLI("status", "--json")
	var rows []statusRow
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 2 {
		t.Fatalf("--json: %d %q", code, out)
	}
	for _, r := range rows {
		if r.Role == "rev" && (r.LastTrigger == nil || r.LastTrigger.TriggerID != "st-1") {
			t.Fatalf("rev last trigger %+v", r.LastTrigger)
		}
	}
}

// shortStatus is the status line of runtimes as the API answers them.
func shortStatus(rts []runtimeView, qualify bool) string {
	es := make([]tui.StatusEntry, 0, len(rts))
	for _, rt := range rts {
		es = append(es, tui.EntryOf(rt.Runtime, rt.QueueDepth))
	}
	return tui.ShortLine(es, qualify)
}
