package cli

import (
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFallbackRuntimeCollectedOncePromptDone (issue 36 item 2): a runtime a fallback
// spawned beside a kept pane (here: an agent stuck BUSY past the max hold) is a second
// agent session. Once its prompt is done (acked, its screen READY, nothing in flight) and
// it stayed so for AsideIdle, it is stopped and deregistered: its window is gone and it is
// no longer in the fleet. The held runtime is left as it was.
func TestFallbackRuntimeCollectedOncePromptDone(t *testing.T) {
	td, _ := readerSetup(t, func(c *daemon.Config) {
		c.Inject.MaxHold = 2 * time.Second
		c.Inject.AsideIdle = time.Second
	})
	fresh := filepath.Join(td.cfg.Panes.Roots[0], "fresh.log")
	var rt runtimeView
	body := spawnBody{Workspace: "w1", Role: "stuck", Agent: "reader", Dir: td.cfg.Panes.Roots[0],
		Argv: []string{"sh", "-c", `sleep 1; printf '[#####.....] 48%% fetching\n'; exec sleep 600`}}
	if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &rt); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Readiness == "BUSY" })
	if _, err := td.trigger(map[string]any{"trigger_id": "col1", "workspace": "w1", "agent": "stuck", "prompt": "go col1"}); err != nil {
		t.Fatal(err)
	}
	got := td.waitTrigger("col1", closed)
	fb := checkAside(t, td, got, "stuck")
	waitFile(t, fresh, "[BRIDGE_TRIGGER id=col1 ", 20*time.Second)

	deadline := time.Now().Add(30 * time.Second)
	for len(td.asideRuntimes("stuck")) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the fallback runtime %s is still in the fleet after its prompt was done: %+v", fb.RuntimeID, td.asideRuntimes("stuck"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out := td.tmux("list-panes", "-a", "-F", "#{pane_id}"); strings.Contains(out, fb.PaneID+"\n") {
		t.Fatalf("the fallback runtime's pane %s is still there:\n%s", fb.PaneID, out)
	}
	var recs []struct{ Event string }
	if err := td.c.do(t0(), "GET", "/v1/audit?runtime="+fb.RuntimeID, nil, &recs); err != nil {
		t.Fatal(err)
	}
	var story []string
	for _, r := range recs {
		story = append(story, r.Event)
	}
	if s := strings.Join(story, " "); !strings.Contains(s, "runtime_stopped") || !strings.Contains(s, "runtime_deregistered") {
		t.Fatalf("fallback runtime's audit: %s", s)
	}
	if held := td.get(rt.RuntimeID); held.PaneID != rt.PaneID || held.Status == "deregistered" {
		t.Fatalf("the held runtime was touched: %+v", held)
	}
	if b, _ := os.ReadFile(fresh); strings.Count(string(b), "[BRIDGE_TRIGGER id=") != 1 {
		t.Fatalf("fresh.log: %q", b)
	}
}

// TestFallbackRuntimeLeftByEarlierDaemonCollected: a fallback runtime an earlier daemon
// spawned, whose prompt is done, is collected by the next daemon too (no trigger of the
// new one would ever name it).
func TestFallbackRuntimeLeftByEarlierDaemonCollected(t *testing.T) {
	td, _ := readerSetup(t, func(c *daemon.Config) {
		c.Inject.MaxHold = 2 * time.Second
		c.Inject.AsideIdle = time.Hour // not collected by this daemon
	})
	var rt runtimeView
	body := spawnBody{Workspace: "w1", Role: "stuck", Agent: "reader", Dir: td.cfg.Panes.Roots[0],
		Argv: []string{"sh", "-c", `sleep 1; printf '[#####.....] 48%% fetching\n'; exec sleep 600`}}
	if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &rt); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Readiness == "BUSY" })
	if _, err := td.trigger(map[string]any{"trigger_id": "left1", "workspace": "w1", "agent": "stuck", "prompt": "go left1"}); err != nil {
		t.Fatal(err)
	}
	fb := checkAside(t, td, td.waitTrigger("left1", closed), "stuck")
	cfg := td.cfg
	td.stop()
	cfg.Inject.AsideIdle = time.Second
	td = startDaemon(t, cfg)
	deadline := time.Now().Add(30 * time.Second)
	for len(td.asideRuntimes("stuck")) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the fallback runtime %s an earlier daemon left is still in the fleet", fb.RuntimeID)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if held := td.get(rt.RuntimeID); held.Status == "deregistered" || held.PaneID != rt.PaneID {
		t.Fatalf("the held runtime was touched: %+v", held)
	}
}
