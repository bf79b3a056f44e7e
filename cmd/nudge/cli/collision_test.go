package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
)

// operator is a human at a real tmux client, attached through a pseudo-terminal.
type operator struct {
	t    *testing.T
	ptmx *os.File
	cmd  *exec.Cmd
}

func (td *testDaemon) attachOperator(target string) *operator {
	td.t.Helper()
	cmd := exec.Command("tmux", "-L", td.cfg.Panes.SocketName, "attach-session", "-t", target)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		td.t.Fatal(err)
	}
	go io.Copy(io.Discard, ptmx) //nolint:errcheck // drains the client's screen until close
	op := &operator{t: td.t, ptmx: ptmx, cmd: cmd}
	td.t.Cleanup(op.close)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(td.tmux("list-clients", "-F", "#{client_control_mode}"), "0") {
		if time.Now().After(deadline) {
			td.t.Fatal("operator client never attached")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return op
}

func (op *operator) typeKeys(s string) {
	for i := 0; i < len(s); i++ {
		if _, err := op.ptmx.Write([]byte{s[i]}); err != nil {
			op.t.Fatal(err)
		}
		time.Sleep(15 * time.Millisecond)
	}
}

func (op *operator) close() {
	op.ptmx.Close()
	if op.cmd.Process != nil {
		op.cmd.Process.Kill()
	}
	op.cmd.Wait() //nolint:errcheck // killed on purpose
}

func collisionConfig(t *testing.T) daemon.Config {
	cfg := newTestConfig(t)
	cfg.Monitor.QuietWindow = 1500 * time.Millisecond
	cfg.Inject.DeferRecheck = 200 * time.Millisecond
	cfg.Inject.MaxDefer = 6 * time.Second
	return cfg
}

// spawnBash starts a bash runtime with a plain "$ " prompt.
func (td *testDaemon) spawnBash(role string) runtimeView {
	rt := td.spawnShell("w1", role, "bash", "--norc", "--noprofile")
	td.tmux("send-keys", "-t", rt.PaneID, "-l", "PS1='$ '")
	td.tmux("send-keys", "-t", rt.PaneID, "Enter")
	return td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Readiness == "READY" && !r.OperatorBusy })
}

func TestHumanTypingDefersThenDelivers(t *testing.T) {
	td := startDaemon(t, collisionConfig(t))
	rt := td.spawnBash("rev")
	op := td.attachOperator(rt.PaneID)
	op.typeKeys("echo human-was-here\r")
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.OperatorBusy })
	tr, err := td.trigger(map[string]any{"trigger_id": "d1", "workspace": "w1", "agent": "rev", "prompt": "automation text"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.State != "deferred" || tr.ErrorCode != "OPERATOR_BUSY" || tr.Result != "deferred" || tr.DeferredUntil == nil {
		t.Fatalf("first answer: %+v", tr)
	}
	got := td.waitTrigger("d1", closed)
	if got.State != "acked" || got.DeferredAt == nil || got.InjectedAt == nil || !got.InjectedAt.After(*got.DeferredAt) {
		t.Fatalf("receipt: %+v", got)
	}
	screen := td.tmux("capture-pane", "-p", "-t", rt.PaneID)
	ran := false // the human's line reached bash and ran (tmux 3.2's Any binding swallowed it)
	for _, line := range strings.Split(screen, "\n") {
		if strings.Contains(line, "human-was-here") && strings.Contains(line, "BRIDGE_TRIGGER") {
			t.Fatalf("human text mixed with the prompt:\n%s", screen)
		}
		ran = ran || strings.TrimSpace(line) == "human-was-here"
	}
	if !ran {
		t.Fatalf("the human's command did not run:\n%s", screen)
	}
	if !strings.Contains(screen, "[BRIDGE_TRIGGER id=d1") {
		t.Fatalf("prompt not delivered:\n%s", screen)
	}
}

func TestDraftBlocksUntilDeferTimeout(t *testing.T) {
	cfg := collisionConfig(t)
	cfg.Inject.MaxHold = 3 * time.Second
	td := startDaemon(t, cfg)
	rt := td.spawnBash("rev")
	op := td.attachOperator(rt.PaneID)
	op.typeKeys("half-typed")
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.OperatorBusy })
	td.trigger(map[string]any{"trigger_id": "d2", "workspace": "w1", "agent": "rev", "prompt": "must not land in the draft"})
	got := td.waitTrigger("d2", closed)
	// Past the max defer window the trigger is held for the person (a collision event),
	// and past the max hold after it, it fails: never an agent spawned beside their pane
	// (issue 36 item 2), never typed into the draft.
	if got.State != "failed" || got.ErrorCode != "DEFER_TIMEOUT" || got.Result != "timeout" || got.Fallback != "" ||
		got.FallbackRuntimeID != "" || got.RuntimeID != rt.RuntimeID || got.InjectedAt != nil {
		t.Fatalf("receipt: %+v", got)
	}
	if story := events(td.audit("d2")); !strings.Contains(story, "trigger_collision") || strings.Contains(story, "fallback") {
		t.Fatalf("audit: %s", story)
	}
	if aside := td.asideRuntimes("rev"); len(aside) != 0 {
		t.Fatalf("an agent was started beside the operator's pane: %+v", aside)
	}
	screen := td.tmux("capture-pane", "-p", "-t", rt.PaneID)
	if strings.Contains(screen, "BRIDGE_TRIGGER") || !strings.Contains(screen, "$ half-typed") {
		t.Fatalf("the draft was touched:\n%s", screen)
	}
}

// TestHumanTypingPastMaxDeferGetsNoSecondAgent (issue 36 item 2; seed 000 §12, §13.2, seed
// 001 §6.6): a person who types in a worker's pane for longer than the max defer window
// does not get a second agent (ROLE-fb-*) started beside them. The trigger is held for
// them with a named collision event (audit trigger_collision, event collision, code
// DEFER_TIMEOUT), stays deferred, and resumes on its own once they stop: typed into the
// live pane, acked, delivered, no fallback.
func TestHumanTypingPastMaxDeferGetsNoSecondAgent(t *testing.T) {
	cfg := collisionConfig(t)
	cfg.Inject.MaxDefer = 2 * time.Second
	td := startDaemon(t, cfg)
	rt := td.spawnBash("rev")
	op := td.attachOperator(rt.PaneID)
	op.typeKeys("echo typing-0\r")
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.OperatorBusy })
	if _, err := td.trigger(map[string]any{"trigger_id": "long1", "workspace": "w1", "agent": "rev", "prompt": "after the human"}); err != nil {
		t.Fatal(err)
	}
	// Keep typing (a line every ~300 ms, inside the 1.5 s quiet window) until the trigger
	// is past the max defer window and held for the person.
	deadline := time.Now().Add(30 * time.Second)
	var held nudge.Trigger
	for i := 1; ; i++ {
		op.typeKeys(fmt.Sprintf("echo typing-%d\r", i))
		held = nudge.Trigger{}
		if err := td.c.do(t0(), "GET", "/v1/triggers/long1", nil, &held); err != nil {
			t.Fatal(err)
		}
		if held.State == "deferred" && strings.Contains(held.Message, "collision reported") {
			break
		}
		if held.Closed || time.Now().After(deadline) {
			t.Fatalf("not held for the person past the max defer window: %+v\nstory %s", held, events(td.audit("long1")))
		}
	}
	if held.ErrorCode != "OPERATOR_BUSY" || held.Result != "deferred" || held.DeferredUntil == nil {
		t.Fatalf("held: %+v", held)
	}
	got := td.waitTrigger("long1", closed) // the person stopped: it goes into the live pane
	if got.State != "acked" || got.Result != "delivered" || got.Fallback != "" || got.RuntimeID != rt.RuntimeID {
		t.Fatalf("receipt: %+v\nstory %s", got, events(td.audit("long1")))
	}
	story := events(td.audit("long1"))
	if !strings.Contains(story, "trigger_collision") || strings.Contains(story, "fallback") {
		t.Fatalf("audit: %s", story)
	}
	if aside := td.asideRuntimes("rev"); len(aside) != 0 {
		t.Fatalf("a second agent was started beside the person: %+v", aside)
	}
	for _, r := range td.audit("long1") {
		if r.Event == "trigger_collision" && (r.Code != "DEFER_TIMEOUT" || !strings.Contains(string(r.Detail), `"held_until"`)) {
			t.Fatalf("collision record: %+v %s", r, r.Detail)
		}
	}
	resp, err := unixGet(t0(), td.cfg.Socket, "/v1/events?since=0&follow=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"type":"collision"`) || !strings.Contains(string(body), `"trigger_id":"long1"`) {
		t.Fatalf("no collision event on /v1/events:\n%.2000s", body)
	}
}

func TestForceOverrideIsAudited(t *testing.T) {
	td := startDaemon(t, collisionConfig(t))
	rt := td.spawnBash("rev")
	op := td.attachOperator(rt.PaneID)
	op.typeKeys("draft ")
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.OperatorBusy })
	_, err := td.trigger(map[string]any{"trigger_id": "f1", "workspace": "w1", "agent": "rev", "prompt": "urgent",
		"force_override": true, "reason": "operator asked", "override_intent": "human_override"})
	if err != nil {
		t.Fatal(err)
	}
	got := td.waitTrigger("f1", closed)
	if got.State != "acked" {
		t.Fatalf("receipt: %+v", got)
	}
	var sent nudge.AuditRecord
	for _, r := range td.audit("f1") {
		if r.Event == "trigger_sent" {
			sent = r
		}
	}
	var d map[string]any
	json.Unmarshal(sent.Detail, &d)
	if d["force_override_requested"] != true || d["force_override_applied"] != true || d["collision_gate"] != "bypassed" ||
		d["override_intent"] != "human_override" || d["override_reason_prefix"] != "human_override:" {
		t.Fatalf("audit detail: %s", sent.Detail)
	}
	if sent.Subject == "" || sent.PeerUID == nil {
		t.Fatalf("audit lacks the caller: %+v", sent)
	}
}

func TestHumanInterventionSyncsTheOrchestrator(t *testing.T) {
	cfg := collisionConfig(t)
	cfg.Orchestrator = "w1/orch"
	td := startDaemon(t, cfg)
	_, orchFile := rawCat(t, td, "w1", "orch")
	rt := td.spawnBash("worker")
	op := td.attachOperator(rt.PaneID)
	op.typeKeys("echo fixing-by-hand\r")
	got := readUntil(t, orchFile, func(s string) bool { return strings.Contains(s, "reason=human_intervention") })
	if !strings.Contains(got, "A human intervened directly in worker") {
		t.Fatalf("orchestrator got:\n%q", got)
	}
}

// TestHumanInterventionHoldsWorkerForOrchestratorSync (issue 36 item 3; seed 000 §13.2,
// seed 001 §4.1): with a runtime whose role is orchestrator in the workspace (no
// --orchestrator flag), a human's intervention in a worker's pane sends the orchestrator
// a sync trigger, and the worker's queued trigger waits (ORCHESTRATOR_SYNC) until the
// orchestrator took that sync: here the orchestrator is paused first, so it cannot take
// it until it is resumed.
func TestHumanInterventionHoldsWorkerForOrchestratorSync(t *testing.T) {
	td := startDaemon(t, collisionConfig(t))
	orch, orchFile := rawCat(t, td, "w1", "orchestrator")
	if err := td.c.do(t0(), "POST", "/v1/runtimes/"+orch.RuntimeID+"/pause", map[string]any{"reason": "busy elsewhere"}, nil); err != nil {
		t.Fatal(err)
	}
	rt := td.spawnBash("worker")
	op := td.attachOperator(rt.PaneID)
	op.typeKeys("echo fixing-by-hand\r")
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.OperatorBusy })
	if _, err := td.trigger(map[string]any{"trigger_id": "wk1", "workspace": "w1", "agent": "worker", "prompt": "carry on"}); err != nil {
		t.Fatal(err)
	}
	held := td.waitTrigger("wk1", func(tr nudge.Trigger) bool { return tr.ErrorCode == "ORCHESTRATOR_SYNC" || tr.Closed })
	if held.State != "deferred" || !strings.Contains(held.Message, "sync_") {
		t.Fatalf("the worker's trigger was not held for the orchestrator's sync: %+v", held)
	}
	syncID := held.Message[strings.Index(held.Message, "sync_"):]
	sync := td.waitTrigger(syncID, func(tr nudge.Trigger) bool { return tr.State == "deferred" })
	if sync.RuntimeID != orch.RuntimeID || sync.Reason != "human_intervention" {
		t.Fatalf("sync trigger: %+v", sync)
	}
	if again := td.waitTrigger("wk1", func(nudge.Trigger) bool { return true }); again.InjectedAt != nil {
		t.Fatalf("the worker got its trigger before the orchestrator took the sync: %+v", again)
	}
	if err := td.c.do(t0(), "POST", "/v1/runtimes/"+orch.RuntimeID+"/resume", nil, nil); err != nil {
		t.Fatal(err)
	}
	got := readUntil(t, orchFile, func(s string) bool { return strings.Contains(s, "reason=human_intervention") })
	if !strings.Contains(got, "A human intervened directly in worker") {
		t.Fatalf("orchestrator got:\n%q", got)
	}
	sync = td.waitTrigger(syncID, closed)
	done := td.waitTrigger("wk1", closed)
	if done.State != "acked" || done.InjectedAt == nil || sync.SubmittedAt == nil || done.InjectedAt.Before(*sync.SubmittedAt) {
		t.Fatalf("worker %+v\nsync %+v", done, sync)
	}
}
