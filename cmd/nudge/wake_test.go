package main

import (
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
	woken := td.d.wake.Round()
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
		if again := td.d.wake.Round(); len(again) != 0 {
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
