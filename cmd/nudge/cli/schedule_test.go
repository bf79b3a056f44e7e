package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
)

func scheduleConfig(t *testing.T) daemon.Config {
	cfg := newTestConfig(t)
	cfg.Schedule.MinGap, cfg.Schedule.MinEvery = time.Millisecond, time.Millisecond
	return cfg
}

func (td *testDaemon) addSchedule(agent, prompt, every string) nudge.Schedule {
	td.t.Helper()
	var s nudge.Schedule
	if err := td.c.do(t0(), "POST", "/v1/schedules", scheduleBody{Workspace: "w1", Agent: agent, Prompt: prompt, Every: every}, &s); err != nil {
		td.t.Fatal(err)
	}
	return s
}

func (td *testDaemon) triggersOf(agent string) []nudge.Trigger {
	var ts []nudge.Trigger
	if err := td.c.do(t0(), "GET", "/v1/triggers?agent="+agent, nil, &ts); err != nil {
		td.t.Fatal(err)
	}
	return ts
}

func TestScheduleBatchesDuePromptsForAnAgent(t *testing.T) {
	td := startDaemon(t, scheduleConfig(t))
	rt := td.spawnBash("ps")
	td.addSchedule("ps", "report spawn status", "1s")
	td.addSchedule("ps", "report context usage", "1s")
	deadline := time.Now().Add(20 * time.Second)
	var ts []nudge.Trigger
	for time.Now().Before(deadline) {
		if ts = td.triggersOf("ps"); len(ts) > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(ts) == 0 {
		t.Fatal("no scheduled trigger")
	}
	first := td.waitTrigger(ts[0].TriggerID, closed)
	if !strings.Contains(first.Prompt, "report spawn status") || !strings.Contains(first.Prompt, "report context usage") ||
		!strings.Contains(first.ScheduleID, ",") || first.State != "acked" {
		t.Fatalf("not one batched trigger: %+v", first)
	}
	if screen := td.tmux("capture-pane", "-p", "-t", rt.PaneID); !strings.Contains(screen, "[BRIDGE_TRIGGER id="+first.TriggerID) {
		t.Fatalf("not delivered:\n%s", screen)
	}
}

func TestScheduleSkippedWhileBusy(t *testing.T) {
	td := startDaemon(t, scheduleConfig(t))
	rt := td.spawnShell("w1", "busy", "sh", "-c", "while :; do echo working; sleep 0.05; done")
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Readiness == "BUSY" })
	td.addSchedule("busy", "health check", "300ms")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var recs []nudge.AuditRecord
		td.c.do(t0(), "GET", "/v1/audit?event=schedule_skipped", nil, &recs)
		if len(recs) >= 2 {
			if !strings.Contains(recs[0].Reason, "BUSY") {
				t.Fatalf("skip reason: %q", recs[0].Reason)
			}
			if ts := td.triggersOf("busy"); len(ts) != 0 {
				t.Fatalf("a busy agent got scheduled triggers: %+v", ts)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("schedule never skipped")
}
