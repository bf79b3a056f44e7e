package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nudgehq/nudge"
)

// Issue 32 item 11: the rate limit and the loop guard count per runtime, not per the
// caller's name for the agent or per thread id. A caller with a trigger token used to
// multiply the 10 triggers/min an agent takes by sending each with a new thread id, or
// by naming the agent once by its role and once by its agent_id; and a loop kept going
// by alternating the two names was never blocked.

// catWithAgentID spawns a raw cat runtime role in w1 with an agent_id besides its role.
func catWithAgentID(t *testing.T, td *testDaemon, role, agentID string) runtimeView {
	t.Helper()
	file := filepath.Join(td.cfg.Panes.Roots[0], role+".bytes")
	var rt runtimeView
	err := td.c.do(t0(), "POST", "/v1/runtimes", map[string]any{"workspace": "w1", "role": role, "agent": "shell",
		"agent_id": agentID, "dir": td.cfg.Panes.Roots[0], "argv": []string{"sh", "-c", "stty raw; exec cat > " + file}}, &rt)
	if err != nil {
		t.Fatalf("spawn %s: %v", role, err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	readUntil(t, file, func(string) bool { _, err := os.Stat(file); return err == nil })
	return rt
}

func TestRateLimitPerRuntime(t *testing.T) {
	td := startDaemon(t, newTestConfig(t)) // the seed's 10 triggers/min
	caller := td.as(td.issue(t, "--subject", "flood", "--workspace", "w1", "--verbs", "trigger", "--ttl", "1h"))
	send := func(t *testing.T, id string, body map[string]any) nudge.Trigger {
		t.Helper()
		body["trigger_id"], body["workspace"] = id, "w1"
		if err := caller.do(t0(), "POST", "/v1/triggers", body, nil); err != nil {
			t.Fatalf("trigger %s: %v", id, err)
		}
		return td.waitTrigger(id, func(t nudge.Trigger) bool { return t.Closed || t.State == "deferred" })
	}
	check := func(t *testing.T, what string, i int, got nudge.Trigger) {
		t.Helper()
		if i < 10 && got.State != "acked" {
			t.Fatalf("%s #%d, within the runtime's 10/min: %+v", what, i+1, got)
		}
		if i >= 10 && (got.State != "deferred" || got.ErrorCode != nudge.TriggerRateLimited) {
			t.Errorf("%s #%d, past the runtime's 10/min: state %s code %q, want deferred TRIGGER_RATE_LIMITED", what, i+1, got.State, got.ErrorCode)
		}
	}

	t.Run("ThreadIDs", func(t *testing.T) {
		catWithAgentID(t, td, "rev", "reviewer")
		for i := range 12 {
			got := send(t, fmt.Sprintf("th-%d", i), map[string]any{"agent": "rev", "thread_id": fmt.Sprintf("thread-%d", i), "prompt": fmt.Sprintf("p%d", i)})
			check(t, "a new thread id each", i, got)
		}
	})
	t.Run("RoleAndAgentID", func(t *testing.T) {
		catWithAgentID(t, td, "ops", "ops_agent")
		for i := range 11 { // the 12th would queue behind the 11th in its thread
			body := map[string]any{"thread_id": "one", "prompt": fmt.Sprintf("q%d", i)}
			if i%2 == 0 {
				body["agent"] = "ops"
			} else {
				body["agent_id"] = "ops_agent"
			}
			check(t, "role and agent_id in turn", i, send(t, fmt.Sprintf("name-%d", i), body))
		}
	})
	t.Run("ForceOverride", func(t *testing.T) {
		// force_override is the trigger token's own word (a reason is all it takes): it
		// goes past a human's draft, not past the runtime's budget. An operator's `nudge
		// force` (admin) still delivers a trigger the limit holds.
		catWithAgentID(t, td, "frc", "forced")
		for i := range 12 {
			got := send(t, fmt.Sprintf("force-%d", i), map[string]any{"agent": "frc", "thread_id": fmt.Sprintf("ft-%d", i),
				"prompt": fmt.Sprintf("f%d", i), "force_override": true, "reason": "urgent, says the caller"})
			check(t, "force_override each", i, got)
		}
		var forced nudge.Trigger
		if err := td.c.do(t0(), "POST", "/v1/triggers/force-10/force", map[string]any{"reason": "operator says so"}, &forced); err != nil {
			t.Fatalf("operator force: %v", err)
		}
		if got := td.waitTrigger("force-10", closed); got.State != "acked" {
			t.Errorf("operator force of a rate-limited trigger: %+v, want acked", got)
		}
	})
	t.Run("LoopGuardBothNames", func(t *testing.T) {
		catWithAgentID(t, td, "lg", "lg_agent")
		for i, name := range []string{"agent", "agent_id", "agent", "agent_id"} {
			agent := map[string]string{"agent": "lg", "agent_id": "lg_agent"}[name]
			got := send(t, fmt.Sprintf("loop-%d", i), map[string]any{name: agent, "thread_id": "loop", "prompt": "the same finding"})
			switch {
			case i < 3 && got.State != "acked":
				t.Fatalf("repeat %d by %s: %+v", i+1, name, got)
			case i == 3 && got.ErrorCode != nudge.ThreadAutoBlocked:
				t.Errorf("repeat %d by %s, after 3 identical prompts to the runtime: state %s code %q, want THREAD_AUTO_BLOCKED", i+1, name, got.State, got.ErrorCode)
			}
		}
	})
}
