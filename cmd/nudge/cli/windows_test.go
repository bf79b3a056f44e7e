package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// Seed 002 (the watcher enumerates tmux windows and owns their lifecycle): `nudge ls`
// shows the fleet, with a window opened by hand in a workspace's session listed as
// unmanaged; a runtime that ended is dropped from it after --runtime-retention, and
// `nudge ls --all` still shows it (before: no unmanaged panes, and every ended runtime
// listed forever).
func TestLsFleetUnmanagedAndAll(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.Panes.SweepInterval = 200 * time.Millisecond
	cfg.Panes.Retention = 500 * time.Millisecond
	td := startDaemon(t, cfg)
	live := td.spawnShell("w", "live", "cat")
	var done runtimeView
	body := spawnBody{Workspace: "w", Role: "done", Agent: "shell", Dir: cfg.Panes.Roots[0], Argv: []string{"sh", "-c", "sleep 0.3; exit 0"}}
	if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &done); err != nil {
		t.Fatal(err)
	}
	td.tmux("new-window", "-d", "-t", "=agents_w:", "-n", "byhand", "cat")

	deadline := time.Now().Add(20 * time.Second)
	var out string
	for {
		out, _, _ = td.runCLI("ls")
		if !strings.Contains(out, done.RuntimeID) && strings.Contains(out, "UNMANAGED") && strings.Contains(out, "byhand") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ls never showed the fleet without the ended runtime, and the hand-opened window:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(rowOf(out, live.RuntimeID), "ready") {
		t.Errorf("ls lost the live runtime:\n%s", out)
	}
	out, _, code := td.runCLI("ls", "--all", "-o", "json")
	var rts []api.Runtime
	if code != 0 || json.Unmarshal([]byte(out), &rts) != nil {
		t.Fatalf("ls --all: exit %d %s", code, out)
	}
	seen := map[string]string{}
	for _, r := range rts {
		seen[r.RuntimeID] = string(r.Status)
	}
	if seen[live.RuntimeID] != "ready" || seen[done.RuntimeID] != "deregistered" {
		all, _ := td.d.Rooms().DB.Runtimes().ListRuntimes()
		t.Errorf("ls --all: %v\n%s\nstore: %+v", seen, out, all)
	}
	out, _, code = td.runCLI("ls", "--unmanaged", "-o", "json")
	var ps []api.Stray
	if code != 0 || json.Unmarshal([]byte(out), &ps) != nil || len(ps) != 1 || ps[0].TmuxWindow != "byhand" || ps[0].WorkspaceID != "w" {
		t.Errorf("ls --unmanaged: exit %d %s", code, out)
	}
}
