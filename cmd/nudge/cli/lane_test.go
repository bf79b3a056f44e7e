package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
)

// Issue 12 item 4: one runtime, two threads. A per-thread gate holds only its thread:
// thread A's rate limit must not hold thread B's trigger, order within thread A is kept,
// and a forced trigger goes next instead of waiting for the rate window.

func laneConfig(t *testing.T) daemon.Config {
	cfg := newTestConfig(t)
	cfg.Inject.RateLimit, cfg.Inject.RatePer = 1, 10*time.Minute // far longer than any wait below
	cfg.Inject.RuntimeRate = 10                                  // the runtime's budget over its threads: room for thread B
	cfg.Inject.MaxDefer = 15 * time.Minute
	return cfg
}

func submitted(t nudge.Trigger) bool {
	return t.State == "submitted" || t.State == "acked"
}

func TestLaneRateLimitedThreadDoesNotHoldOtherThread(t *testing.T) {
	td := startDaemon(t, laneConfig(t))
	_, file := td.catAgent("w1", "rev")
	post := func(id, thread string) {
		t.Helper()
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "w1", "agent": "rev",
			"thread_id": thread, "prompt": "prompt " + id}); err != nil {
			t.Fatal(err)
		}
	}
	post("a1", "thA")
	td.waitTrigger("a1", submitted)
	post("a2", "thA") // thread A's one slot is spent: held by the rate limit
	a2 := td.waitTrigger("a2", func(t nudge.Trigger) bool { return t.State == "deferred" })
	if a2.ErrorCode != "TRIGGER_RATE_LIMITED" || a2.DeferredUntil == nil {
		t.Fatalf("a2 held without its code or deferred_until: %+v", a2)
	}
	post("a3", "thA") // behind a2 in its own thread
	post("b1", "thB") // another thread: must not wait behind thread A
	td.waitTrigger("b1", submitted)
	waitFile(t, file, "prompt b1", 20*time.Second)
	for _, id := range []string{"a2", "a3"} {
		if got := td.waitTrigger(id, func(nudge.Trigger) bool { return true }); submitted(got) {
			t.Fatalf("%s went out past its thread's rate limit: %+v", id, got)
		}
	}
	// Forcing a3 sends it next, although a2 is ahead of it in thread A and the window
	// has minutes left.
	var forced nudge.Trigger
	if err := td.c.do(t0(), "POST", "/v1/triggers/a3/force", forceBody{Reason: "operator says now"}, &forced); err != nil {
		t.Fatal(err)
	}
	td.waitTrigger("a3", submitted)
	waitFile(t, file, "prompt a3", 20*time.Second)
	if got := td.waitTrigger("a2", func(nudge.Trigger) bool { return true }); submitted(got) {
		t.Fatalf("a2 went out with the forced a3: %+v", got)
	}
	lines := readUntil(t, file, func(s string) bool { return strings.Contains(s, "prompt a3") })
	if strings.Index(lines, "prompt b1") > strings.Index(lines, "prompt a3") {
		t.Fatalf("order in the pane:\n%s", lines)
	}
}
