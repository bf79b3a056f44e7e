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

// lifecycleSetup starts a daemon that sweeps often; profiles(root) are extra profiles
// (name → fields) written to its profile directory first.
func lifecycleSetup(t *testing.T, profiles func(root string) map[string]map[string]any, tweak func(*daemon.Config)) *testDaemon {
	t.Helper()
	cfg := newTestConfig(t)
	cfg.Panes.SweepInterval = 200 * time.Millisecond
	cfg.ProfileDir = t.TempDir()
	if profiles != nil {
		for name, p := range profiles(cfg.Panes.Roots[0]) {
			b, _ := json.Marshal(p)
			if err := os.WriteFile(filepath.Join(cfg.ProfileDir, name+".json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if tweak != nil {
		tweak(&cfg)
	}
	return startDaemon(t, cfg)
}

// spawnBody posts a spawn and returns the record as first answered (status starting).
func (td *testDaemon) spawnRaw(body spawnBody) runtimeView {
	td.t.Helper()
	var rt runtimeView
	if body.Dir == "" {
		body.Dir = td.cfg.Panes.Roots[0]
	}
	if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &rt); err != nil {
		td.t.Fatalf("spawn: %v", err)
	}
	return rt
}

// runtimeRecords is the runtime's audit records, oldest first.
func (td *testDaemon) runtimeRecords(id string) []nudge.AuditRecord {
	td.t.Helper()
	var recs []nudge.AuditRecord
	if err := td.c.do(t0(), "GET", "/v1/audit?runtime="+id, nil, &recs); err != nil {
		td.t.Fatal(err)
	}
	return recs
}

// statusPath is the runtime's status changes as "from>to" words.
func statusPath(recs []nudge.AuditRecord) string {
	var out []string
	for _, r := range recs {
		if r.Event != "runtime_status_changed" {
			continue
		}
		var d struct{ From, To string }
		json.Unmarshal(r.Detail, &d)
		out = append(out, d.From+">"+d.To)
	}
	return strings.Join(out, " ")
}

// quiet waits for n more reconcile sweeps: long enough for a restart to have happened.
func (td *testDaemon) sweeps(n int64) {
	td.t.Helper()
	start := td.d.Rooms().Registry.Stats().Sweeps
	deadline := time.Now().Add(30 * time.Second)
	for td.d.Rooms().Registry.Stats().Sweeps < start+n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// TestExitZeroIsExitedNotRestarted: a program that ends with status 0 has finished its
// work (seed 003). It is exited — not offline, not restarted, not a step toward a crash
// loop — and it no longer reads READY. `nudge restart` brings it back.
func TestExitZeroIsExitedNotRestarted(t *testing.T) {
	td := lifecycleSetup(t, nil, nil)
	flag := filepath.Join(td.cfg.Panes.Roots[0], "second-run")
	rt := td.spawnShell("w1", "done", "bash", "--norc", "--noprofile", "-c",
		`if [ -e `+flag+` ]; then exec cat; fi; touch `+flag+`; PS1='$ ' exec bash --norc --noprofile -i`)
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Readiness == "READY" })
	td.tmux("send-keys", "-t", rt.PaneID, "-l", "exit 0")
	td.tmux("send-keys", "-t", rt.PaneID, "Enter")
	got := td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status != "ready" && r.Status != "triggering" })
	td.sweeps(10) // RestartDelay is 1s: a restart would have happened by now
	got = td.get(rt.RuntimeID)
	if got.Status != "exited" || got.Restarts != 0 || got.ExitStatus == nil || *got.ExitStatus != 0 ||
		len(got.Failures) != 0 || got.Readiness == "READY" {
		t.Fatalf("after exit 0: %+v\nstatus path: %s", got.Runtime, statusPath(td.runtimeRecords(rt.RuntimeID)))
	}
	if out, _, code := td.runCLI("ls"); code != 0 || !strings.Contains(out, "exited") || strings.Contains(rowOf(out, rt.RuntimeID), "READY") {
		t.Fatalf("nudge ls (exit %d):\n%s", code, out)
	}
	if out, _, _ := td.runCLI("status", "--short"); !strings.Contains(out, "EXITED") {
		t.Errorf("nudge status --short: %q", out)
	}
	if !strings.Contains(events(td.runtimeRecords(rt.RuntimeID)), "runtime_exited") {
		t.Errorf("no runtime_exited audit: %s", events(td.runtimeRecords(rt.RuntimeID)))
	}
	// nudge restart revives it.
	if out, errs, code := td.runCLI("restart", rt.RuntimeID, "--reason", "more work"); code != 0 {
		t.Fatalf("nudge restart: exit %d\n%s%s", code, out, errs)
	}
	got = td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	if got.Restarts != 1 || got.PaneID == rt.PaneID {
		t.Fatalf("after restart: %+v", got.Runtime)
	}
}

// TestCrashRestartsNativeResumeOrFresh: a non-zero exit is a crash and is restarted: through
// the agent's interactive resume when its session id is known, fresh when it is not.
func TestCrashRestartsNativeResumeOrFresh(t *testing.T) {
	var resumer string
	td := lifecycleSetup(t, func(root string) map[string]map[string]any {
		resumer = filepath.Join(root, "resumer.sh")
		os.WriteFile(resumer, []byte("printf '%s\\n' \"$@\" > \"$0.args\"\nexec cat\n"), 0o755)
		return map[string]map[string]any{"resumable": {"launch": []string{"sh"}, "allowed_launchers": []string{"sh"},
			"pack": "shell", "queues_input": true, "submitted_is_ack": true,
			"resume_interactive": []string{"sh", resumer, "--resume", "{session_id}"}}}
	}, nil)
	root := td.cfg.Panes.Roots[0]
	withID := td.spawnRaw(spawnBody{Workspace: "w1", Role: "known", Agent: "resumable", SessionID: "sess-42",
		Argv: []string{"sh", "-c", "sleep 0.5; exit 1"}})
	flag := filepath.Join(root, "fresh-again")
	without := td.spawnRaw(spawnBody{Workspace: "w1", Role: "unknown", Agent: "resumable",
		Argv: []string{"sh", "-c", "if [ -e " + flag + " ]; then exec cat; fi; touch " + flag + "; sleep 0.5; exit 1"}})

	got := td.waitRuntime(withID.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" && r.Restarts == 1 })
	args := readUntil(t, resumer+".args", func(s string) bool { return strings.Contains(s, "sess-42") })
	if args != "--resume\nsess-42\n" || len(got.Failures) != 1 {
		t.Fatalf("resume argv %q, runtime %+v", args, got.Runtime)
	}
	path := statusPath(td.runtimeRecords(withID.RuntimeID))
	if !strings.Contains(path, ">offline offline>starting starting>ready") {
		t.Fatalf("status path: %s", path)
	}
	got = td.waitRuntime(without.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" && r.Restarts == 1 })
	if len(got.Failures) != 1 || got.ExitStatus != nil {
		t.Fatalf("fresh restart: %+v", got.Runtime)
	}
}

// TestDoneMarkerIsExited: the profile's completion marker on a line of its own makes the
// program's end clean whatever its status; the marker inside a sentence does not.
func TestDoneMarkerIsExited(t *testing.T) {
	td := lifecycleSetup(t, func(string) map[string]map[string]any {
		return map[string]map[string]any{"service": {"launch": []string{"sh"}, "allowed_launchers": []string{"sh"},
			"pack": "shell", "queues_input": true, "restart_on_exit": true}}
	}, nil)
	// A profile may opt into restart-on-exit: a clean exit is restarted, not counted.
	flag := filepath.Join(td.cfg.Panes.Roots[0], "served")
	svc := td.spawnRaw(spawnBody{Workspace: "w1", Role: "svc", Agent: "service",
		Argv: []string{"sh", "-c", "if [ -e " + flag + " ]; then exec cat; fi; touch " + flag + "; sleep 0.3; exit 0"}})
	done := td.spawnRaw(spawnBody{Workspace: "w1", Role: "marked", Agent: "shell",
		Argv: []string{"sh", "-c", "sleep 0.3; echo __TASK_DONE__; sleep 0.5; exit 3"}})
	crash := td.spawnRaw(spawnBody{Workspace: "w1", Role: "mention", Agent: "shell",
		Argv: []string{"sh", "-c", "sleep 0.3; echo 'not yet __TASK_DONE__ here'; sleep 0.5; exit 3"}})
	got := td.waitRuntime(done.RuntimeID, func(r runtimeView) bool { return r.Status == "exited" || r.Restarts > 0 })
	if got.Status != "exited" || got.ExitStatus == nil || *got.ExitStatus != 3 {
		t.Fatalf("marked: %+v\n%s", got.Runtime, statusPath(td.runtimeRecords(done.RuntimeID)))
	}
	got = td.waitRuntime(crash.RuntimeID, func(r runtimeView) bool { return r.Restarts > 0 || r.Status == "exited" })
	if got.Status == "exited" || len(got.Failures) == 0 {
		t.Fatalf("mention: %+v", got.Runtime)
	}
	td.sweeps(5)
	if got := td.get(done.RuntimeID); got.Status != "exited" || got.Restarts != 0 {
		t.Fatalf("marked runtime restarted: %+v", got.Runtime)
	}
	got = td.waitRuntime(svc.RuntimeID, func(r runtimeView) bool { return r.Restarts == 1 && r.Status == "ready" })
	if len(got.Failures) != 0 {
		t.Fatalf("restart-on-exit counted a crash: %+v", got.Runtime)
	}
}

// TestCrashLoopFailedThenRestartRevives: three crashes in the window make the runtime
// failed (no more restarts); `nudge restart` (the API endpoint) brings it back.
func TestCrashLoopFailedThenRestartRevives(t *testing.T) {
	td := lifecycleSetup(t, nil, func(c *daemon.Config) { c.Panes.CrashLoopFailures = 3 })
	flag := filepath.Join(td.cfg.Panes.Roots[0], "fixed")
	rt := td.spawnRaw(spawnBody{Workspace: "w1", Role: "loop", Agent: "shell",
		Argv: []string{"sh", "-c", "if [ -e " + flag + " ]; then exec cat; fi; sleep 0.2; exit 9"}})
	got := td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "failed" })
	if got.Restarts != 2 || got.Readiness == "READY" {
		t.Fatalf("crash loop: %+v", got.Runtime)
	}
	os.WriteFile(flag, nil, 0o644)
	var after runtimeView
	if err := td.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/restart", reasonBody{Reason: "fixed the config"}, &after); err != nil {
		t.Fatal(err)
	}
	got = td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	if got.Restarts != 3 {
		t.Fatalf("revived: %+v", got.Runtime)
	}
	if !strings.Contains(events(td.runtimeRecords(rt.RuntimeID)), "api_restart") {
		t.Errorf("restart not audited")
	}
}

// TestStartingWaitsForReadyAndTimesOut: a runtime whose profile waits for readiness stays
// starting until its agent shows READY, and a trigger sent meanwhile is held (with the start
// deadline as deferred_until), never typed early; one that never shows READY fails at its
// start timeout with its screen, redacted, as evidence.
func TestStartingWaitsForReadyAndTimesOut(t *testing.T) {
	td := lifecycleSetup(t, func(string) map[string]map[string]any {
		base := func(timeout string) map[string]any {
			return map[string]any{"launch": []string{"sh"}, "allowed_launchers": []string{"sh"}, "pack": "shell",
				"queues_input": true, "submitted_is_ack": true, "ready_on": "readiness", "start_timeout": timeout}
		}
		return map[string]map[string]any{"slow": base("60s"), "stuck": base("2s")}
	}, nil)
	root := td.cfg.Panes.Roots[0]
	shown, typed := filepath.Join(root, "shown"), filepath.Join(root, "typed")
	slow := td.spawnRaw(spawnBody{Workspace: "w1", Role: "slow", Agent: "slow",
		Argv: []string{"sh", "-c", "sleep 2; touch " + shown + "; printf '$ '; exec cat > " + typed}})
	stuck := td.spawnRaw(spawnBody{Workspace: "w1", Role: "stuck", Agent: "stuck",
		Argv: []string{"sh", "-c", "echo 'Loading forever api_key=supersecretvalue123'; exec sleep 600"}})

	tr, err := td.trigger(map[string]any{"trigger_id": "early", "workspace": "w1", "agent": "slow", "prompt": "not before READY"})
	if err != nil {
		t.Fatal(err)
	}
	// The answer carries the lane's first decision: held until the start deadline.
	if tr.State != "deferred" || tr.ErrorCode != "RUNTIME_STARTING" || tr.DeferredUntil == nil ||
		tr.DeferredUntil.Before(tr.CreatedAt.Add(30*time.Second)) {
		t.Fatalf("trigger for a starting runtime: %+v", tr)
	}
	got := td.waitTrigger("early", closed)
	fi, err := os.Stat(shown)
	if err != nil || got.State != "acked" || got.InjectedAt == nil || got.InjectedAt.Before(fi.ModTime()) {
		t.Fatalf("typed before the agent showed READY (shown at %v): %+v", fi, got)
	}
	readUntil(t, typed, func(s string) bool { return strings.Contains(s, "not before READY") })
	if path := statusPath(td.runtimeRecords(slow.RuntimeID)); !strings.HasPrefix(path, "starting>ready") {
		t.Errorf("slow status path: %s", path)
	}

	failed := td.waitRuntime(stuck.RuntimeID, func(r runtimeView) bool { return r.Status != "starting" })
	if failed.Status != "failed" || failed.Readiness == "READY" {
		t.Fatalf("stuck: %+v", failed.Runtime)
	}
	var ev nudge.AuditRecord
	for _, r := range td.runtimeRecords(stuck.RuntimeID) {
		if r.Event == "runtime_start_timeout" {
			ev = r
		}
	}
	if ev.Code != "SPAWN_FAILED" || !strings.Contains(string(ev.Detail), "Loading forever") ||
		strings.Contains(string(ev.Detail), "supersecretvalue123") {
		t.Fatalf("start timeout evidence: %+v %s", ev, ev.Detail)
	}
}

// TestFallbackAndPauseStatesVisible: the fallback chain shows itself in the state machine
// (fallback_resume while the resume runs, spawn_recovery → starting for the fresh spawn),
// and `nudge pause` is the paused state.
func TestFallbackAndPauseStatesVisible(t *testing.T) {
	td, resume := ackSetup(t, nil)
	rt := td.spawnFake("fb", "none")
	os.WriteFile(resume+".fail", nil, 0o644)
	if _, err := td.trigger(map[string]any{"trigger_id": "fb1", "workspace": "w1", "agent": "fb", "prompt": "anyone?"}); err != nil {
		t.Fatal(err)
	}
	if got := td.waitTrigger("fb1", closed); got.Fallback != "spawn" {
		t.Fatalf("receipt: %+v", got)
	}
	path := statusPath(td.runtimeRecords(rt.RuntimeID))
	if !strings.Contains(path, ">fallback_resume") || !strings.Contains(path, "spawn_recovery>starting") {
		t.Fatalf("status path: %s", path)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	if _, _, code := td.runCLI("pause", rt.RuntimeID); code != 0 {
		t.Fatal("pause failed")
	}
	if got := td.get(rt.RuntimeID); got.Status != "paused" || !got.Paused {
		t.Fatalf("paused: %+v", got.Runtime)
	}
	if _, _, code := td.runCLI("resume", rt.RuntimeID); code != 0 {
		t.Fatal("resume failed")
	}
	if got := td.get(rt.RuntimeID); got.Status != "ready" || got.Paused {
		t.Fatalf("resumed: %+v", got.Runtime)
	}
}

// TestCodexReadyOnlyWithItsComposer: the real Codex is starting until its composer is up
// (the detector reads READY), not as soon as its pane lives; a trigger sent at once waits
// for that and is then submitted.
func TestCodexReadyOnlyWithItsComposer(t *testing.T) {
	cfg, _, _ := codexSetup(t)
	td := startDaemon(t, cfg)
	var rt runtimeView
	if err := td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: "cx", Role: "dev", Agent: "codex", Dir: cfg.Panes.Roots[0]}, &rt); err != nil {
		t.Fatal(err)
	}
	if _, err := td.trigger(map[string]any{"trigger_id": "cx-early", "workspace": "cx", "agent": "dev", "prompt": "say hello"}); err != nil {
		t.Fatal(err)
	}
	got := td.waitTrigger("cx-early", func(t nudge.Trigger) bool { return t.SubmittedAt != nil || t.Closed })
	if got.SubmittedAt == nil {
		t.Fatalf("trigger: %+v\nscreen:\n%s", got, td.tmux("capture-pane", "-p", "-t", rt.PaneID))
	}
	var ready nudge.AuditRecord
	for _, r := range td.runtimeRecords(rt.RuntimeID) {
		var d struct{ To string }
		json.Unmarshal(r.Detail, &d)
		if r.Event == "runtime_status_changed" && d.To == "ready" && ready.Seq == 0 {
			ready = r
		}
	}
	if ready.Reason != "agent shows READY" || got.InjectedAt == nil || got.InjectedAt.Before(ready.Time) {
		t.Fatalf("starting → ready %+v; trigger injected at %v\n%s", ready, got.InjectedAt, statusPath(td.runtimeRecords(rt.RuntimeID)))
	}
}

// TestRestartedAgentReadsReadyAgain: a restarted agent whose screen reads as the old one's
// did (back at its prompt) is seen READY again: the readiness of the new program is read
// afresh, so the runtime does not stay starting.
func TestRestartedAgentReadsReadyAgain(t *testing.T) {
	td := lifecycleSetup(t, func(string) map[string]map[string]any {
		return map[string]map[string]any{"prompty": {"launch": []string{"sh"}, "allowed_launchers": []string{"sh"},
			"pack": "shell", "queues_input": true, "submitted_is_ack": true, "ready_on": "readiness"}}
	}, nil)
	rt := td.spawnRaw(spawnBody{Workspace: "w1", Role: "p", Agent: "prompty", Argv: []string{"sh", "-c", "printf '$ '; exec cat"}})
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	for i := 1; i <= 3; i++ {
		if _, errs, code := td.runCLI("restart", rt.RuntimeID); code != 0 {
			t.Fatalf("restart %d: %s", i, errs)
		}
		td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" && r.Restarts == i })
	}
}

// TestAdoptedAgentBackToShellIsACrash: an adopted pane whose agent ends and leaves its
// shell in front (seed 001 §6.8) is a crash, not a live agent; it stays offline while the
// shell is there and is a live runtime again once an agent runs in it again.
func TestAdoptedAgentBackToShellIsACrash(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.ProfileDir = t.TempDir()
	os.WriteFile(filepath.Join(cfg.ProfileDir, "agentx.json"), []byte(`{"name": "agentx", "launch": ["cat"], "pack": "codex"}`), 0o644)
	td := startDaemon(t, cfg)
	td.spawnShell("w1", "other", "sh", "-c", "exec sleep 600") // creates the session
	pane := strings.TrimSpace(td.tmux("new-window", "-d", "-t", "agents_w1:", "-n", "mine", "-P", "-F", "#{pane_id}",
		"bash", "--norc", "--noprofile"))
	td.tmux("send-keys", "-t", pane, "cat", "Enter")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if strings.TrimSpace(td.tmux("display-message", "-p", "-t", pane, "#{pane_current_command}")) == "cat" {
			break
		}
	}
	var rt runtimeView
	if err := td.c.do(t0(), "POST", "/v1/runtimes/register", registerBody{Workspace: "w1", Role: "adopted", Agent: "agentx",
		Target: pane, Unmanaged: true}, &rt); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	td.tmux("send-keys", "-t", pane, "C-c") // the agent ends; bash is in front again
	got := td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "offline" })
	if got.PaneID != pane {
		t.Fatalf("runtime %+v", got.Runtime)
	}
	var recs []nudge.AuditRecord
	td.c.do(t0(), "GET", "/v1/audit?runtime="+rt.RuntimeID, nil, &recs)
	if !strings.Contains(story(recs), "exited back to its shell (bash)") {
		t.Fatalf("no crash on record:\n%s", story(recs))
	}
	time.Sleep(2 * time.Second) // a sweep or two: the shell alone does not make it live
	if td.get(rt.RuntimeID).Status != "offline" {
		t.Fatalf("live again with only the shell in front: %+v", td.get(rt.RuntimeID).Runtime)
	}
	td.tmux("send-keys", "-t", pane, "cat", "Enter") // an agent runs there again
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
}
