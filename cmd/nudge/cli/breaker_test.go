package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
)

// Issue 12 item 10 (seed 000 §14): a runtime whose triggers keep failing is cooled down,
// not hammered. After --breaker-failures failed triggers its breaker opens: the next
// trigger waits with RUNTIME_COOLDOWN until the cooldown's end (deferred_until), the
// runtime record shows it, and then one probe trigger goes (half-open) while the others
// wait; the probe's ack closes the breaker.
func TestBreakerCoolsDownFailingRuntime(t *testing.T) {
	td, resume := ackSetup(t, func(c *daemon.Config) {
		c.Inject.AckRetries = 0
		c.Inject.BreakerFailures, c.Inject.BreakerCooldown = 2, 3*time.Second
	})
	os.WriteFile(resume+".deaf", nil, 0o644) // the fallback's fresh agent never acks either
	// No session id: the fallback after each ACK_TIMEOUT spawns afresh in the pane
	// instead of running a resume there (which would hold the runtime while it runs).
	var rt runtimeView
	body := spawnBody{Workspace: "w1", Role: "deaf", Agent: "fake", Dir: td.cfg.Panes.Roots[0],
		Argv: []string{"sh", filepath.Join(td.cfg.Panes.Roots[0], "agent.sh"), "none"}}
	if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &rt); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	post := func(id string, ackMS int) nudge.Trigger {
		t.Helper()
		tr, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "w1", "agent": "deaf",
			"prompt": "prompt " + id, "ack_timeout_ms": ackMS})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	for _, id := range []string{"b1", "b2"} {
		post(id, 300)
		if got := td.waitTrigger(id, closed); got.ErrorCode != "ACK_TIMEOUT" {
			t.Fatalf("%s: %+v", id, got)
		}
	}
	open := td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Breaker == "open" })
	if open.CooldownUntil == nil {
		t.Fatalf("open breaker without cooldown_until: %+v", open.Runtime)
	}
	post("b3", 30000)
	held := td.waitTrigger("b3", func(t nudge.Trigger) bool { return t.State != "queued" })
	if held.State != "deferred" || held.ErrorCode != "RUNTIME_COOLDOWN" || held.DeferredUntil == nil ||
		held.DeferredUntil.Before(*open.CooldownUntil) || held.Attempts != 0 {
		t.Fatalf("b3 not held by the cooldown: %+v", held)
	}
	// After the cooldown b3 probes the runtime; b4 waits for the probe's outcome.
	td.waitTrigger("b3", func(t nudge.Trigger) bool { return t.State == "submitted" })
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Breaker == "half_open" })
	post("b4", 30000)
	if got := td.waitTrigger("b4", func(t nudge.Trigger) bool { return t.State != "queued" }); got.ErrorCode != "RUNTIME_COOLDOWN" || got.Attempts != 0 {
		t.Fatalf("b4 went past a half-open breaker: %+v", got)
	}
	if err := td.c.do(t0(), "POST", "/v1/triggers/b3/ack", nil, nil); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Breaker == "" && r.CooldownUntil == nil })
	td.waitTrigger("b4", func(t nudge.Trigger) bool { return t.State == "submitted" })
}

// An open breaker survives a daemon restart: it is on the runtime's record.
func TestBreakerSurvivesRestart(t *testing.T) {
	td, resume := ackSetup(t, func(c *daemon.Config) {
		c.Inject.AckRetries = 0
		c.Inject.BreakerFailures, c.Inject.BreakerCooldown = 1, 10*time.Minute
	})
	os.WriteFile(resume+".deaf", nil, 0o644) // the fallback's fresh agent never acks either
	var rt runtimeView
	body := spawnBody{Workspace: "w1", Role: "deaf", Agent: "fake", Dir: td.cfg.Panes.Roots[0],
		Argv: []string{"sh", filepath.Join(td.cfg.Panes.Roots[0], "agent.sh"), "none"}}
	if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &rt); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	if _, err := td.trigger(map[string]any{"trigger_id": "r1", "workspace": "w1", "agent": "deaf", "prompt": "hello", "ack_timeout_ms": 300}); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Breaker == "open" })
	td.waitTrigger("r1", closed)
	td.stop()
	td2 := startDaemon(t, td.cfg)
	td2.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	if _, err := td2.trigger(map[string]any{"trigger_id": "r2", "workspace": "w1", "agent": "deaf", "prompt": "again"}); err != nil {
		t.Fatal(err)
	}
	got := td2.waitTrigger("r2", func(t nudge.Trigger) bool { return t.State != "queued" })
	if got.ErrorCode != "RUNTIME_COOLDOWN" || got.Attempts != 0 {
		t.Fatalf("after a restart: %+v", got)
	}
}
