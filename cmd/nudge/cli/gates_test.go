package cli

import (
	"strings"
	"testing"

	"github.com/nudgehq/nudge"
)

// TestGatesSurviveDaemonRestart: a loop-guard block and a rate-limit window outlive the
// daemon (a restart used to unblock a blocked thread silently); `nudge unblock` lifts the
// block.
func TestGatesSurviveDaemonRestart(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.Inject.LoopRepeats, cfg.Inject.RateLimit = 2, 3
	cfg.Inject.RuntimeRate = 10 // the runtime's budget over its threads: room for both threads
	td := startDaemon(t, cfg)
	rt, file := rawCat(t, td, "w1", "rev")
	send := func(td *testDaemon, id, thread, prompt string) nudge.Trigger {
		t.Helper()
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "w1", "agent": "rev", "thread_id": thread, "prompt": prompt}); err != nil {
			t.Fatal(err)
		}
		return td.waitTrigger(id, func(t nudge.Trigger) bool { return t.Closed || t.State == "deferred" })
	}
	// The same prompt twice blocks the thread; three deliveries fill the rate window.
	for i, id := range []string{"l1", "l2"} {
		if got := send(td, id, "th-loop", "same again"); got.State != "acked" {
			t.Fatalf("#%d: %+v", i, got)
		}
	}
	for i, id := range []string{"r1", "r2", "r3"} {
		if got := send(td, id, "th-rate", "prompt "+id); got.State != "acked" {
			t.Fatalf("#%d: %+v", i, got)
		}
	}
	if got := send(td, "r4", "th-rate", "one too many"); got.ErrorCode != "TRIGGER_RATE_LIMITED" {
		t.Fatalf("r4: %+v", got)
	}
	td.stop()

	td = startDaemon(t, cfg)
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	if got := send(td, "l3", "th-loop", "after the restart"); got.State != "failed" || got.ErrorCode != "THREAD_AUTO_BLOCKED" {
		t.Fatalf("blocked thread after a restart: %+v", got)
	}
	// r4, held when the daemon stopped, is held again by the same window (not typed at once).
	// (The lane has stepped past it: l3, queued after it, is already decided.)
	r4 := td.waitTrigger("r4", func(nudge.Trigger) bool { return true })
	if r4.State != "deferred" || r4.Attempts != 0 || r4.ErrorCode != "TRIGGER_RATE_LIMITED" || r4.DeferredUntil == nil {
		t.Fatalf("rate window after a restart: %+v", r4)
	}
	if out, errs, code := td.runCLI("unblock", "th-loop", "--reason", "looked at it"); code != 0 {
		t.Fatalf("nudge unblock: exit %d %s %s", code, out, errs)
	}
	if got := send(td, "l4", "th-loop", "unblocked now"); got.State != "acked" {
		t.Fatalf("after unblock: %+v", got)
	}
	readUntil(t, file, func(s string) bool { return strings.Contains(s, "unblocked now") })
	var recs []nudge.AuditRecord
	td.c.do(t0(), "GET", "/v1/audit?thread=th-loop", nil, &recs)
	if !strings.Contains(events(recs), "thread_unblocked") {
		t.Errorf("unblock not in the thread's audit: %s", events(recs))
	}
}

// TestForceCommand: `nudge force ID --reason R` delivers a held trigger now, and is
// refused without a reason.
func TestForceCommand(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rt, file := rawCat(t, td, "w1", "rev")
	td.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/pause", nil, nil)
	if tr, err := td.trigger(map[string]any{"trigger_id": "f1", "workspace": "w1", "agent": "rev", "prompt": "go now"}); err != nil || tr.State != "deferred" {
		t.Fatalf("held: %+v %v", tr, err)
	}
	if _, _, code := td.runCLI("force", "f1"); code != 2 {
		t.Errorf("force without --reason: exit %d, want 2", code)
	}
	if out, errs, code := td.runCLI("force", "f1", "--reason", "operator says so"); code != 0 {
		t.Fatalf("nudge force: exit %d %s %s", code, out, errs)
	}
	if got := td.waitTrigger("f1", closed); got.State != "acked" || !got.ForceOverride {
		t.Fatalf("forced: %+v", got)
	}
	readUntil(t, file, func(s string) bool { return strings.Contains(s, "go now") })
}
