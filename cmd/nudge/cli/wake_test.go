package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/wake"
)

// The quiet policy end to end, on real tmux: a pane quiet for 15 minutes (of a manual
// clock) gets exactly one wake prompt, typed through the pipeline and acked, with a
// reason naming the policy; a busy pane (another workspace, so the gap is not why) gets
// none, and its skip is audited. Before the wake room no policy prompted anyone.
func TestWakeQuietPaneOnceBusyNone(t *testing.T) {
	t.Parallel()
	clock := wake.NewManualClock(time.Now())
	cfg := newTestConfig(t)
	cfg.Wake.Quiet, cfg.Wake.Every, cfg.Wake.Clock = 15*time.Minute, 1000*time.Hour, clock
	td := startDaemon(t, cfg)
	quiet := td.spawnBash("quiet")
	busy := td.spawnShell("w2", "busy", "sh", "-c", "while :; do echo working; sleep 0.05; done")
	td.waitRuntime(busy.RuntimeID, func(r runtimeView) bool { return r.Readiness == "BUSY" })

	clock.Add(16 * time.Minute)
	woken := td.d.Rooms().Wake.Round()
	if len(woken) != 1 || woken[0].RuntimeID != quiet.RuntimeID || woken[0].Err != nil {
		t.Fatalf("woken: %+v, want %s alone", woken, quiet.RuntimeID)
	}
	got := td.waitTrigger(woken[0].TriggerID, closed)
	if got.State != "acked" || got.Reason != "wake:quiet" || got.Caller != "wake" || got.Agent != "quiet" {
		t.Fatalf("wake trigger: %+v", got)
	}
	if screen := td.tmux("capture-pane", "-p", "-t", quiet.PaneID); !strings.Contains(screen, "[BRIDGE_TRIGGER id="+got.TriggerID) {
		t.Fatalf("not typed:\n%s", screen)
	}
	for _, d := range []time.Duration{time.Minute, 5 * time.Minute, 5 * time.Minute} { // the same quiet spell
		clock.Add(d)
		if again := td.d.Rooms().Wake.Round(); len(again) != 0 {
			t.Fatalf("+%s: woken again: %+v", d, again)
		}
	}
	if ts := td.triggersOf("quiet"); len(ts) != 1 {
		t.Fatalf("quiet pane got %d triggers, want 1", len(ts))
	}
	if ts := td.triggersOf("busy"); len(ts) != 0 {
		t.Fatalf("busy pane got triggers: %+v", ts)
	}
	var sent, skipped []nudge.AuditRecord
	td.c.do(t0(), "GET", "/v1/audit?event=wake_sent", nil, &sent)
	td.c.do(t0(), "GET", "/v1/audit?event=wake_skipped", nil, &skipped)
	if len(sent) != 1 || sent[0].TriggerID != got.TriggerID || sent[0].Reason != "wake:quiet" {
		t.Fatalf("wake_sent: %+v", sent)
	}
	if len(skipped) != 1 || skipped[0].RuntimeID != busy.RuntimeID || !strings.Contains(skipped[0].Reason, "agent is BUSY") {
		t.Fatalf("wake_skipped: %+v", skipped)
	}
}

// The unread and dormant policies through the API: a thread head an agent's cursor has
// not reached, reported by a caller who may trigger that agent, and heartbeats that
// stopped, wake it with one batched prompt. A token of another workspace cannot report a
// head for it (it could not trigger it either): refused, and nothing is kept.
func TestWakeUnreadAndDormantThroughTheAPI(t *testing.T) {
	t.Parallel()
	clock := wake.NewManualClock(time.Now())
	cfg := newTestConfig(t)
	cfg.Wake.Unread, cfg.Wake.Dormant, cfg.Wake.Every, cfg.Wake.Clock = 10*time.Minute, 30*time.Minute, 1000*time.Hour, clock
	td := startDaemon(t, cfg)
	rt := td.spawnBash("rev")
	if err := td.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/heartbeat", map[string]any{"cursor": "m-1"}, nil); err != nil {
		t.Fatal(err)
	}
	spy := td.as(td.issue(t, "--subject", "c-orch", "--workspace", "wC", "--verbs", "trigger", "--ttl", "1h"))
	err := spy.do(t0(), "POST", "/v1/threads/thr-1/head", map[string]any{"workspace": "w1", "agent": "rev", "head": "m-9"}, nil)
	wantAPIError(t, "another workspace's head", err, "FORBIDDEN", "")
	for i, body := range []map[string]any{
		{"workspace": "w1", "agent": "rev", "head": "m 2\x1b[2J"},
		{"workspace": "w1", "agent": "nobody", "head": "m-2"},
		{"workspace": "w1", "head": "m-2"},
	} {
		if err := td.c.do(t0(), "POST", "/v1/threads/thr-1/head", body, nil); err == nil {
			t.Errorf("#%d: %v accepted", i, body)
		}
	}
	out, errOut, code := td.runCLI("unread", "thr-1", "m-2", "--workspace", "w1", "--agent", "rev")
	var h struct {
		RuntimeID string `json:"runtime_id"`
		Unread    bool   `json:"unread"`
	}
	if err := json.Unmarshal([]byte(out), &h); code != 0 || err != nil || !h.Unread || h.RuntimeID != rt.RuntimeID {
		t.Fatalf("nudge unread: exit %d %s %s", code, out, errOut)
	}
	clock.Add(11 * time.Minute)
	woken := td.d.Rooms().Wake.Round()
	if len(woken) != 1 || strings.Join(woken[0].Policies, "+") != "unread" {
		t.Fatalf("woken: %+v", woken)
	}
	got := td.waitTrigger(woken[0].TriggerID, closed)
	if got.Reason != "wake:unread" || !strings.Contains(got.Prompt, "thr-1 (head m-2); your cursor: m-1") || strings.Contains(got.Prompt, "m-9") {
		t.Fatalf("wake trigger: %+v", got)
	}
	ready := func(r runtimeView) bool { return r.Readiness == "READY" && !r.OperatorBusy }
	td.waitRuntime(rt.RuntimeID, ready) // bash printed its answer to the prompt: busy a moment
	clock.Add(25 * time.Minute)         // unread again (a spell after the last prompt) and dormant: one prompt
	woken = td.d.Rooms().Wake.Round()
	if len(woken) != 1 || strings.Join(woken[0].Policies, "+") != "unread+dormant" {
		var skipped []nudge.AuditRecord
		td.c.do(t0(), "GET", "/v1/audit?event=wake_skipped", nil, &skipped)
		var now runtimeView
		td.c.do(t0(), "GET", "/v1/runtimes/"+rt.RuntimeID, nil, &now)
		t.Fatalf("woken: %+v; skipped %+v; runtime %+v", woken, skipped, now.Runtime)
	}
	td.waitTrigger(woken[0].TriggerID, closed)
	td.waitRuntime(rt.RuntimeID, ready)
	if err := td.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/heartbeat", map[string]any{"cursor": "m-2"}, nil); err != nil {
		t.Fatal(err)
	}
	clock.Add(20 * time.Minute) // read, and heartbeating
	if again := td.d.Rooms().Wake.Round(); len(again) != 0 {
		t.Fatalf("woken after reading: %+v", again)
	}
	var heads []nudge.AuditRecord
	td.c.do(t0(), "GET", "/v1/audit?event=thread_head", nil, &heads)
	if len(heads) != 1 || heads[0].ThreadID != "thr-1" || heads[0].RuntimeID != rt.RuntimeID {
		t.Fatalf("thread_head audit: %+v", heads)
	}
}

// Wake prompts that change nothing trip the loop guard like any trigger (seed 000 §14:
// the same prompt three times without progress); the wake room then stops sending them,
// skipped with the reason, instead of a failed trigger every round, until the thread is
// unblocked.
func TestWakeStopsAtTheLoopGuard(t *testing.T) {
	t.Parallel()
	clock := wake.NewManualClock(time.Now())
	cfg := newTestConfig(t)
	cfg.Wake.Quiet, cfg.Wake.Every, cfg.Wake.Clock = 15*time.Minute, 1000*time.Hour, clock
	td := startDaemon(t, cfg)
	rt := td.spawnBash("idle")
	ready := func(r runtimeView) bool { return r.Readiness == "READY" && !r.OperatorBusy }
	clock.Add(30 * time.Second) // the prompts read "No output for 15m0s" each time
	for i := range cfg.Inject.LoopRepeats {
		clock.Add(15 * time.Minute)
		td.waitRuntime(rt.RuntimeID, ready)
		woken := td.d.Rooms().Wake.Round()
		if len(woken) != 1 {
			t.Fatalf("#%d: woken %+v", i, woken)
		}
		if got := td.waitTrigger(woken[0].TriggerID, closed); got.State != "acked" {
			t.Fatalf("#%d: %+v", i, got)
		}
	}
	clock.Add(15 * time.Minute)
	td.waitRuntime(rt.RuntimeID, ready)
	if woken := td.d.Rooms().Wake.Round(); len(woken) != 0 {
		for _, tr := range td.triggersOf("idle") {
			t.Logf("%s %q", tr.TriggerID, tr.Prompt)
		}
		t.Fatalf("woken past the loop guard: %+v", woken)
	}
	var skipped []nudge.AuditRecord
	td.c.do(t0(), "GET", "/v1/audit?event=wake_skipped", nil, &skipped)
	if len(skipped) != 1 || !strings.Contains(skipped[0].Reason, "thread wake is blocked") {
		t.Fatalf("wake_skipped: %+v", skipped)
	}
	for _, tr := range td.triggersOf("idle") {
		if tr.State == "failed" {
			t.Fatalf("a wake prompt failed: %+v", tr)
		}
	}
	if err := td.c.do(t0(), "POST", "/v1/threads/wake/unblock", map[string]any{"workspace": "w1", "agent": "idle"}, nil); err != nil {
		t.Fatal(err)
	}
	clock.Add(15 * time.Minute)
	if woken := td.d.Rooms().Wake.Round(); len(woken) != 1 {
		t.Fatalf("after the unblock: %+v", woken)
	}
}
