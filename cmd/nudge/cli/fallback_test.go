package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
)

// Issue 12 item 5: fallbacks never type into the wrong pane. A fallback that must keep
// the runtime's pane (unmanaged, or an operator or a stuck agent at it) spawns a new
// managed runtime beside it (ROLE-fb-SUFFIX: listed, stoppable) and the prompt goes
// there, the receipt naming that runtime and its pane; a second trigger goes to the same
// one instead of spawning another.

// lineReader shows a shell-like prompt and appends each line it reads to $1.
const lineReader = `while printf '$ '; IFS= read -r l; do printf '%s\n' "$l" >> "$1"; done`

// readerSetup starts a daemon with a "reader" profile: no prompt at launch, no resume,
// an agent that does not queue input, whose fresh launch appends what it reads to
// fresh.log.
func readerSetup(t *testing.T, tweak func(*daemon.Config)) (*testDaemon, string) {
	t.Helper()
	cfg := newTestConfig(t)
	root := cfg.Panes.Roots[0]
	script := filepath.Join(root, "reader.sh")
	if err := os.WriteFile(script, []byte(lineReader), 0o755); err != nil {
		t.Fatal(err)
	}
	prof := map[string]any{
		"name": "reader", "launch": []string{"sh", script, filepath.Join(root, "fresh.log")}, "allowed_launchers": []string{"sh"},
		"prompt_arg": "", "resume": []string{}, "pack": "shell", "submit_settle": "20ms",
		"queues_input": false, "ack_signals": []string{"marker", "api"}, "submitted_is_ack": true, "ready_quiet": "200ms",
	}
	cfg.ProfileDir = t.TempDir()
	b, _ := json.Marshal(prof)
	if err := os.WriteFile(filepath.Join(cfg.ProfileDir, "reader.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Chain.LaunchGrace = 300 * time.Millisecond
	cfg.Inject.DeferRecheck = 500 * time.Millisecond
	if tweak != nil {
		tweak(&cfg)
	}
	return startDaemon(t, cfg), script
}

// asideRuntimes lists the runtimes a fallback spawned beside role.
func (td *testDaemon) asideRuntimes(role string) []runtimeView {
	td.t.Helper()
	var rts, out []runtimeView
	if err := td.c.do(t0(), "GET", "/v1/runtimes", nil, &rts); err != nil {
		td.t.Fatal(err)
	}
	for _, rt := range rts {
		if strings.HasPrefix(rt.Role, role+"-fb-") {
			out = append(out, rt)
		}
	}
	return out
}

func checkAside(t *testing.T, td *testDaemon, got nudge.Trigger, role string) runtimeView {
	t.Helper()
	aside := td.asideRuntimes(role)
	if len(aside) != 1 {
		t.Fatalf("want one runtime spawned beside %s, have %+v", role, aside)
	}
	fb := aside[0]
	if got.Fallback != "spawn" || got.FallbackRuntimeID != fb.RuntimeID || got.FallbackPane != fb.PaneID ||
		got.RuntimeID != fb.RuntimeID || !fb.Managed || (got.State != "acked" && got.State != "submitted") {
		t.Fatalf("receipt %+v\ndoes not name the runtime the prompt went to: %+v", got, fb.Runtime)
	}
	// The fallback delivered it: an orchestrator reading timeout would resume the session
	// itself and give the agent the prompt twice (seed 000 §9.2; issue 36 item 1).
	if got.Result != "delivered" {
		t.Fatalf("result %q after the fallback delivered it, want delivered: %+v", got.Result, got)
	}
	return fb
}

func TestFallbackForUnmanagedPaneSpawnsManagedRuntime(t *testing.T) {
	td, script := readerSetup(t, nil)
	root := td.cfg.Panes.Roots[0]
	human := filepath.Join(root, "human.log")
	fresh := filepath.Join(root, "fresh.log")
	td.spawnStrictShell("w1", "other") // creates the session
	pane := strings.TrimSpace(td.tmux("new-window", "-d", "-t", "agents_w1:", "-n", "mine", "-P", "-F", "#{pane_id}",
		"sh", script, human))
	var un runtimeView
	if err := td.c.do(t0(), "POST", "/v1/runtimes/register", registerBody{Workspace: "w1", Role: "adopted", Agent: "reader",
		Target: pane, Unmanaged: true}, &un); err != nil {
		t.Fatal(err)
	}
	// Two triggers at once: their fallbacks never replace each other's pane. One spawns
	// the runtime beside the unmanaged pane; the other waits for it and goes there too.
	ids := td.fireTriggers("w1", "un", 2, "adopted")
	if len(ids) != 2 {
		t.Fatalf("accepted %v", ids)
	}
	live, redirect := 0, 0
	var fb runtimeView
	for _, id := range ids {
		got := td.waitTrigger(id, closed)
		fb = checkAside(t, td, got, "adopted")
		waitFile(t, fresh, "[BRIDGE_TRIGGER id="+id+" ", 20*time.Second)
		story := events(td.audit(id))
		if strings.Contains(story, "fallback_deliver_live") {
			live++
		}
		if strings.Contains(story, "fallback_redirect") {
			redirect++
		}
	}
	if live != 1 || redirect != 1 {
		t.Fatalf("%d triggers spawned a runtime and %d went to it; want 1 and 1", live, redirect)
	}
	if err := td.c.do(t0(), "POST", "/v1/runtimes/"+fb.RuntimeID+"/stop", nil, nil); err != nil {
		t.Fatalf("the fallback runtime cannot be stopped: %v", err)
	}
	if b, _ := os.ReadFile(human); strings.Contains(string(b), "BRIDGE_TRIGGER") {
		t.Fatalf("a prompt was typed into the unmanaged pane: %q", b)
	}
}

func TestFallbackAfterDeferTimeoutNeverTypesIntoHeldPane(t *testing.T) {
	td, _ := readerSetup(t, func(c *daemon.Config) { c.Inject.MaxHold = 2 * time.Second })
	busy := filepath.Join(td.cfg.Panes.Roots[0], "busy.log")
	fresh := filepath.Join(td.cfg.Panes.Roots[0], "fresh.log")
	var rt runtimeView
	body := spawnBody{Workspace: "w1", Role: "stuck", Agent: "reader", Dir: td.cfg.Panes.Roots[0],
		Argv: []string{"sh", "-c", `sleep 1; printf '[#####.....] 48%% fetching\n'; exec cat >> ` + busy}}
	if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &rt); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Readiness == "BUSY" })
	for _, id := range []string{"st1", "st2"} {
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "w1", "agent": "stuck", "prompt": "go " + id}); err != nil {
			t.Fatal(err)
		}
		got := td.waitTrigger(id, closed)
		checkAside(t, td, got, "stuck")
		waitFile(t, fresh, "[BRIDGE_TRIGGER id="+id+" ", 20*time.Second)
	}
	time.Sleep(500 * time.Millisecond) // a late typing into the held pane would show by now
	if b, _ := os.ReadFile(busy); strings.Contains(string(b), "BRIDGE_TRIGGER") {
		t.Fatalf("a prompt was typed into the held pane: %q", b)
	}
}

// spawnStrictShell starts a plain managed shell runtime (to create a workspace session).
func (td *testDaemon) spawnStrictShell(ws, role string) runtimeView {
	return td.spawnShell(ws, role, "sh", "-c", "exec sleep 600")
}

// Two triggers that fail on the same managed runtime at once: the first resumes in the
// runtime's pane; the second never relaunches that pane over the first's resume (it waits
// while the resume runs, and at its deadline goes to a runtime spawned beside it).
func TestFallbacksOfTwoTriggersKeepEachOthersPane(t *testing.T) {
	td, resume := ackSetup(t, func(c *daemon.Config) {
		c.Inject.AckRetries, c.Inject.MaxHold = 0, 2*time.Second
		c.Inject.BreakerFailures = 0
	})
	rt := td.spawnFake("deaf", "none")
	if err := os.WriteFile(resume+".deaf", nil, 0o644); err != nil { // the resumed agent never acks
		t.Fatal(err)
	}
	for _, id := range []string{"two-1", "two-2"} {
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "w1", "agent": "deaf",
			"prompt": "prompt " + id, "ack_timeout_ms": 300}); err != nil {
			t.Fatal(err)
		}
	}
	first, second := td.waitTrigger("two-1", closed), td.waitTrigger("two-2", closed)
	if first.Fallback == "spawn" && second.Fallback == "resume" {
		first, second = second, first
	}
	if first.Fallback != "resume" || first.FallbackRuntimeID != rt.RuntimeID || first.FallbackPane == "" {
		t.Fatalf("first: %+v", first)
	}
	if second.Fallback != "spawn" || !strings.HasPrefix(second.FallbackRuntimeID, rt.RuntimeID+"-fb-") {
		t.Fatalf("second: %+v\nstory %s", second, events(td.audit(second.TriggerID)))
	}
	if cur := td.get(rt.RuntimeID); cur.PaneID != first.FallbackPane {
		t.Fatalf("the first trigger's resume (pane %s) was replaced by pane %s", first.FallbackPane, cur.PaneID)
	}
	calls, _ := os.ReadFile(resume + ".calls")
	if n := strings.Count(string(calls), "resume\n"); n != 1 {
		t.Fatalf("%d resumes ran:\n%s", n, calls)
	}
}
