package cli

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
)

// TestRefusedSendKeysFailsTheRuntime (issue 36 item 4): a tmux that refuses send-keys for
// a runtime's pane takes the runtime to failed (seed 001 §9: triggering → failed on
// send_keys_error) and fails the trigger with SEND_KEYS_ERROR. No fallback chain runs:
// relaunching the agent (ending its work) would not make tmux take keys. A later trigger
// fails the same way without a relaunch; once tmux takes keys again, nudge restart
// recovers the runtime (failed → starting) and triggers are delivered.
func TestRefusedSendKeysFailsTheRuntime(t *testing.T) {
	td := startDaemon(t, collisionConfig(t))
	rt := td.spawnBash("rev")
	// From now on this tmux server refuses send-keys: a command alias shadows it with a
	// command that fails (neither a missing target nor a dead pane).
	td.tmux("set", "-s", "command-alias[250]", "send-keys=show-options -g nudge-refuses-send-keys")
	for _, id := range []string{"rk1", "rk2"} {
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "w1", "agent": "rev", "prompt": "refused " + id}); err != nil {
			t.Fatal(err)
		}
		got := td.waitTrigger(id, closed)
		if got.State != nudge.StateFailed || got.ErrorCode != nudge.SendKeysError || got.Fallback != "" || got.Result != nudge.ResultFailed {
			t.Fatalf("%s: receipt %+v\nstory %s", id, got, events(td.audit(id)))
		}
		if story := events(td.audit(id)); strings.Contains(story, "fallback") {
			t.Fatalf("%s: a fallback ran: %s", id, story)
		}
		now := td.get(rt.RuntimeID)
		if now.Status != nudge.StatusFailed || now.PaneID != rt.PaneID || now.PID != rt.PID {
			t.Fatalf("%s: runtime %s pane %s pid %d, want failed in pane %s pid %d (never relaunched)",
				id, now.Status, now.PaneID, now.PID, rt.PaneID, rt.PID)
		}
	}
	td.tmux("set", "-su", "command-alias[250]")
	if err := td.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/restart", nil, nil); err != nil {
		t.Fatalf("restart: %v", err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == nudge.StatusReady && r.Readiness == nudge.Ready })
	if _, err := td.trigger(map[string]any{"trigger_id": "rk3", "workspace": "w1", "agent": "rev", "prompt": "taken again"}); err != nil {
		t.Fatal(err)
	}
	if got := td.waitTrigger("rk3", closed); got.State != nudge.StateAcked {
		t.Fatalf("after the restart: %+v", got)
	}
}

// TestRefusedResendFailsTheRuntime (issue 36 item 4): the retry of a prompt the agent did
// not acknowledge meets a tmux that now refuses send-keys: the runtime goes from retrying
// to failed (seed 001 §9: resend_error) and the trigger fails with SEND_KEYS_ERROR, with
// no resume or spawn.
func TestRefusedResendFailsTheRuntime(t *testing.T) {
	td, resume := ackSetup(t, func(c *daemon.Config) {
		c.Inject.AckRetries = 1
		c.Inject.Backoff = []time.Duration{2 * time.Second}
		c.Inject.BreakerFailures = -1
	})
	rt := td.spawnFake("deaf", "none") // reads prompts, never acks
	if _, err := td.trigger(map[string]any{"trigger_id": "rr1", "workspace": "w1", "agent": "deaf",
		"prompt": "never acked", "ack_timeout_ms": 300}); err != nil {
		t.Fatal(err)
	}
	td.waitTrigger("rr1", func(tr nudge.Trigger) bool { return tr.Attempts == 1 && tr.SubmittedAt != nil || tr.Closed })
	// The first typing went; the retry (after the ack timeout and the backoff) meets a
	// tmux that refuses send-keys.
	td.tmux("set", "-s", "command-alias[250]", "send-keys=show-options -g nudge-refuses-send-keys")
	got := td.waitTrigger("rr1", closed)
	if got.State != nudge.StateFailed || got.ErrorCode != nudge.SendKeysError || got.Fallback != "" {
		t.Fatalf("receipt %+v\nstory %s", got, events(td.audit("rr1")))
	}
	story := events(td.audit("rr1"))
	if !strings.Contains(story, "trigger_retry") || strings.Contains(story, "fallback") {
		t.Fatalf("story: %s", story)
	}
	if now := td.get(rt.RuntimeID); now.Status != nudge.StatusFailed || now.PaneID != rt.PaneID {
		t.Fatalf("runtime %s pane %s, want failed in pane %s", now.Status, now.PaneID, rt.PaneID)
	}
	if calls, _ := os.ReadFile(resume + ".calls"); strings.Contains(string(calls), "resume") {
		t.Fatalf("a resume ran:\n%s", calls)
	}
}
