package cli

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/nudgehq/nudge/cmd/nudge/api"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/inject"
)

// TestReceiptsComplete: result is never empty (pending while in flight), the caller's
// reason is in trigger_received, the runtime records its last trigger, and out-of-range
// input (an ack timeout of the maximum int64, an unknown heartbeat status) is refused.
func TestReceiptsComplete(t *testing.T) {
	td, _ := ackSetup(t, nil)
	rt := td.spawnFake("rc", "one")
	for _, ms := range []int64{math.MaxInt64, inject.MaxAckTimeoutMS + 1, -1} {
		_, err := td.trigger2(map[string]any{"workspace": "w1", "agent": "rc", "prompt": "hi", "ack_timeout_ms": ms})
		if ae, ok := err.(*api.Error); !ok || ae.ErrorCode != "BAD_REQUEST" || !strings.Contains(ae.Message, "ack_timeout_ms") {
			t.Errorf("ack_timeout_ms %d: got %v, want BAD_REQUEST", ms, err)
		}
	}
	err := td.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/heartbeat", map[string]any{"status": "bogus"}, nil)
	if ae, ok := err.(*api.Error); !ok || ae.ErrorCode != "BAD_REQUEST" || !strings.Contains(ae.Message, "active, idle or offline") {
		t.Errorf("heartbeat status bogus: got %v, want BAD_REQUEST", err)
	}
	if err := td.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/heartbeat", heartbeatBody{Status: "idle"}, nil); err != nil {
		t.Errorf("heartbeat idle: %v", err)
	}

	td.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/pause", nil, nil)
	first, err := td.trigger(map[string]any{"trigger_id": "rc-1", "workspace": "w1", "agent": "rc", "thread_id": "th",
		"prompt": "first", "reason": "new_unread_messages", "ack_timeout_ms": 60000})
	if err != nil || first.State != "deferred" || first.Result != "deferred" {
		t.Fatalf("held trigger: %+v %v", first, err)
	}
	second, err := td.trigger(map[string]any{"trigger_id": "rc-2", "workspace": "w1", "agent": "rc", "thread_id": "th", "prompt": "second"})
	if err != nil || second.Result == "" {
		t.Fatalf("queued trigger has no result: %+v %v", second, err)
	}
	for _, id := range []string{"rc-1", "rc-2"} {
		if got := td.waitTrigger(id, func(nudge.Trigger) bool { return true }); got.Result == "" {
			t.Fatalf("%s: empty result: %+v", id, got)
		}
	}
	td.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/resume", nil, nil)
	for _, id := range []string{"rc-1", "rc-2"} {
		if got := td.waitTrigger(id, closed); got.State != "acked" || got.Result != "delivered" {
			t.Fatalf("%s: %+v", id, got)
		}
	}
	if got := td.get(rt.RuntimeID); got.LastTriggerID != "rc-2" {
		t.Errorf("last_trigger_id %q, want rc-2", got.LastTriggerID)
	}
	for _, r := range td.audit("rc-1") {
		if r.Event == "trigger_received" && r.Reason != "new_unread_messages" {
			t.Errorf("trigger_received reason %q", r.Reason)
		}
	}
}

// TestAuditTriggerCausalOrder: `nudge audit --trigger ID` tells a trigger's story in the
// order it happened, the fallback chain's steps included.
func TestAuditTriggerCausalOrder(t *testing.T) {
	td, _ := ackSetup(t, nil)
	td.spawnFake("slow", "none")
	td.trigger(map[string]any{"trigger_id": "co1", "workspace": "w1", "agent": "slow", "thread_id": "th1", "prompt": "wake up"})
	if got := td.waitTrigger("co1", closed); got.Fallback != "resume" {
		t.Fatalf("receipt: %+v", got)
	}
	out, errs, code := td.runCLI("audit", "--trigger", "co1", "--json")
	var recs []nudge.AuditRecord
	if code != 0 || json.Unmarshal([]byte(out), &recs) != nil {
		t.Fatalf("nudge audit: exit %d %s %s", code, out, errs)
	}
	// The resume starts without the prompt, which is then typed into the resumed agent.
	want := []string{"trigger_received", "trigger_sent", "trigger_submitted", "trigger_retry", "fallback_required",
		"fallback_resume_started", "fallback_resume_succeeded", "fallback_deliver_live", "trigger_sent", "ack_received"}
	story := events(recs)
	at := -1
	for _, ev := range want {
		i := -1
		for k := at + 1; k < len(recs); k++ { // each after the one before: an event may come twice
			if recs[k].Event == ev {
				i = k
				break
			}
		}
		if i <= at {
			t.Fatalf("%s out of order (or missing) in the story:\n%s", ev, story)
		}
		at = i
	}
}

// TestFallbackLaunchOnRestartedTmuxServer: a fallback launch that finds the workspace's
// tmux server gone (restarting, or killed and not yet back) does not fail the trigger with
// SPAWN_FAILED: it is retried, and the launch brings the session back.
func TestFallbackLaunchOnRestartedTmuxServer(t *testing.T) {
	td, resume := ackSetup(t, nil)
	rt := td.spawnFake("gone", "none")
	if err := td.c.do(t0(), "DELETE", "/v1/runtimes/"+rt.RuntimeID+"?reason=test", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := td.c.do(t0(), "POST", "/v1/runtimes/register", registerBody{Workspace: "w1", Role: "gone", Agent: "fake",
		Target: rt.PaneID, SessionID: "sess-gone", Unmanaged: true}, nil); err != nil {
		t.Fatal(err)
	}
	td.tmux("kill-server")
	if _, err := td.trigger(map[string]any{"trigger_id": "srv1", "workspace": "w1", "agent": "gone", "prompt": "server back?"}); err != nil {
		t.Fatal(err)
	}
	got := td.waitTrigger("srv1", closed)
	if got.State == "failed" || got.Fallback != "resume" {
		t.Fatalf("receipt %+v\nstory %s", got, events(td.audit("srv1")))
	}
	if calls, _ := os.ReadFile(resume + ".calls"); !strings.Contains(string(calls), "resume\nsess-gone\n") || strings.Contains(string(calls), "server back?") {
		t.Fatalf("resume argv (want the session, never the prompt):\n%s", calls)
	}
}
