package inject

import (
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// decideView is a view of a trigger that every gate lets through: a managed, ready
// runtime with the detectors on, under the rate limit, no breaker, nobody at the pane.
func decideView(now time.Time) view {
	return view{
		windows: windows{now: now, maxDefer: time.Minute, maxHold: 10 * time.Minute},
		t:       nudge.Trigger{TriggerID: "t1", ThreadID: "th", RuntimeID: "rt_w.a", WorkspaceID: "w", Agent: "a"},
		rt:      nudge.Runtime{RuntimeID: "rt_w.a", Managed: true, Status: nudge.StatusReady},
		rateOK:  true, gates: true, readiness: nudge.Ready,
	}
}

// TestDecide: decide's verdict for each gate, in the gates' order, with the clocks it
// leaves and the effects it asks of the lane.
func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		set   func(v *view)
		kind  verdictKind
		code  nudge.Code
		until time.Time
		check func(t *testing.T, v verdict)
	}{
		{name: "Proceed", set: func(v *view) { v.clocks.holdStart = t0.Add(-time.Second) }, kind: proceed,
			check: func(t *testing.T, v verdict) {
				if !v.clocks.holdStart.IsZero() {
					t.Error("the hold clock runs on after the trigger may go")
				}
			}},
		{name: "Unmanaged", set: func(v *view) { v.rt.Managed = false }, kind: fallback, code: nudge.UnmanagedRuntime},
		{name: "FailedRefused", set: func(v *view) { v.rt.Status, v.refused = nudge.StatusFailed, "tmux refused send-keys" }, kind: fail, code: nudge.SendKeysError},
		{name: "Failed", set: func(v *view) { v.rt.Status = nudge.StatusFailed }, kind: fallback, code: nudge.PaneDead},
		{name: "Stopped", set: func(v *view) { v.rt.Status, v.stopped = nudge.StatusOffline, true }, kind: fail, code: nudge.RuntimeStopped},
		{name: "Offline", set: func(v *view) { v.rt.Status = nudge.StatusOffline }, kind: fallback, code: nudge.PaneDead},
		{name: "Exited", set: func(v *view) { v.rt.Status, v.stopped = nudge.StatusExited, true }, kind: fallback, code: nudge.PaneDead},
		{name: "Starting", set: func(v *view) { v.rt.Status, v.startDeadline = nudge.StatusStarting, t0.Add(time.Minute) },
			kind: hold, code: nudge.RuntimeStarting, until: t0.Add(time.Minute)},
		{name: "Relaunching", set: func(v *view) { v.rt.Status = nudge.StatusFallbackResume },
			kind: hold, code: nudge.FallbackInProgress, until: t0.Add(10 * time.Minute),
			check: func(t *testing.T, v verdict) {
				if !v.clocks.holdStart.Equal(t0) {
					t.Errorf("hold clock %s, want it started at %s", v.clocks.holdStart, t0)
				}
			}},
		{name: "LoopBlocked", set: func(v *view) { v.loopBlocked, v.loopWhy = true, "too many turns" }, kind: fail, code: nudge.ThreadAutoBlocked},
		{name: "LoopBlockedSchedule", set: func(v *view) { v.loopBlocked, v.t.ScheduleID = true, "sch_1" }, kind: proceed},
		{name: "Forced", set: func(v *view) {
			v.t.ForceOverride, v.forced = true, true
			v.rt.Paused, v.rateOK, v.busy, v.readiness = true, false, true, nudge.NeedsConfirmation
		}, kind: proceed},
		{name: "ForceOverrideRateLimited", set: func(v *view) { v.t.ForceOverride, v.rateOK, v.rateUntil = true, false, t0.Add(time.Second) },
			kind: hold, code: nudge.TriggerRateLimited, until: t0.Add(time.Second)},
		{name: "ForceOverrideDialog", set: func(v *view) { v.t.ForceOverride, v.readiness = true, nudge.NeedsConfirmation },
			kind: hold, code: nudge.AgentNeedsConfirmation, until: t0.Add(10 * time.Minute)},
		{name: "ForceOverridePastPause", set: func(v *view) { v.t.ForceOverride, v.rt.Paused, v.busy = true, true, true }, kind: proceed},
		{name: "BreakerOpen", set: func(v *view) { v.breaker = breakerView{state: BreakerOpen, until: t0.Add(time.Minute)} },
			kind: hold, code: nudge.RuntimeCooldown, until: t0.Add(time.Minute)},
		{name: "BreakerOpenFallbackDelivery", set: func(v *view) {
			v.breaker, v.t.Fallback = breakerView{state: BreakerOpen, until: t0.Add(time.Minute)}, nudge.BackendSpawn
		}, kind: proceed},
		{name: "BreakerCooled", set: func(v *view) { v.breaker = breakerView{state: BreakerOpen, until: t0} }, kind: proceed,
			check: func(t *testing.T, v verdict) {
				if !v.probe {
					t.Error("the first trigger after the cooldown does not take the probe slot")
				}
			}},
		{name: "BreakerProbePaused", set: func(v *view) { v.breaker, v.rt.Paused = breakerView{state: BreakerHalfOpen}, true },
			kind: hold, code: nudge.RuntimePaused,
			check: func(t *testing.T, v verdict) {
				if !v.probe {
					t.Error("a probe held by a later gate gave up its slot")
				}
			}},
		{name: "BreakerOtherProbe", set: func(v *view) { v.breaker = breakerView{state: BreakerHalfOpen, probe: "t0"} },
			kind: hold, code: nudge.RuntimeCooldown},
		{name: "BreakerOff", set: func(v *view) { v.breaker = breakerView{off: true, state: BreakerOpen, until: t0.Add(time.Hour)} }, kind: proceed},
		{name: "Paused", set: func(v *view) { v.rt.Paused = true }, kind: hold, code: nudge.RuntimePaused, until: t0.Add(10 * time.Minute)},
		{name: "PausedPastMaxHold", set: func(v *view) { v.rt.Paused, v.clocks.holdStart = true, t0.Add(-10*time.Minute) },
			kind: fail, code: nudge.DeferTimeout},
		{name: "RateLimited", set: func(v *view) { v.rateOK, v.rateUntil = false, t0.Add(time.Second) },
			kind: hold, code: nudge.TriggerRateLimited, until: t0.Add(time.Second)},
		{name: "OperatorBusy", set: func(v *view) { v.busy, v.busyUntil, v.busyWhy = true, t0.Add(5*time.Second), "human typing" },
			kind: hold, code: nudge.OperatorBusy, until: t0.Add(5 * time.Second),
			check: func(t *testing.T, v verdict) {
				if !v.clocks.deferStart.Equal(t0) || v.collision != nil {
					t.Errorf("collision clock %s, report %v; want started now, none", v.clocks.deferStart, v.collision)
				}
			}},
		{name: "OperatorBusyUntilWindow", set: func(v *view) {
			v.busy, v.busyWhy, v.clocks.deferStart = true, "draft in composer", t0.Add(-50*time.Second)
		},
			kind: hold, code: nudge.OperatorBusy, until: t0.Add(10 * time.Second)},
		{name: "OperatorPastMaxDefer", set: func(v *view) {
			v.busy, v.busyWhy, v.clocks.deferStart = true, "draft in composer", t0.Add(-time.Minute)
		},
			kind: hold, code: nudge.OperatorBusy, until: t0.Add(10 * time.Minute),
			check: func(t *testing.T, v verdict) {
				if v.collision == nil || !v.clocks.collided || v.collision.Operator != "draft in composer" || v.collision.TriggerID != "t1" {
					t.Errorf("collision %+v collided %v: want it reported once", v.collision, v.clocks.collided)
				}
			}},
		{name: "OperatorReportedOnce", set: func(v *view) {
			v.busy, v.clocks.deferStart, v.clocks.collided = true, t0.Add(-2*time.Minute), true
		}, kind: hold, code: nudge.OperatorBusy,
			check: func(t *testing.T, v verdict) {
				if v.collision != nil {
					t.Error("the collision was reported again")
				}
			}},
		{name: "OperatorPastMaxHold", set: func(v *view) { v.busy, v.clocks.deferStart = true, t0.Add(-11*time.Minute) },
			kind: fail, code: nudge.DeferTimeout},
		{name: "OperatorGone", set: func(v *view) { v.clocks.deferStart, v.clocks.collided = t0.Add(-time.Hour), true }, kind: proceed,
			check: func(t *testing.T, v verdict) {
				if !v.clocks.deferStart.IsZero() || v.clocks.collided {
					t.Error("the collision clock runs on after the person left")
				}
			}},
		{name: "SyncHeld", set: func(v *view) { v.sync = syncView{held: true, h: syncHold{trigger: "sync_1", since: t0}} },
			kind: hold, code: nudge.OrchestratorSync, until: t0.Add(10 * time.Minute),
			check: func(t *testing.T, v verdict) {
				if v.poll != syncPoll {
					t.Errorf("poll %s, want %s", v.poll, syncPoll)
				}
			}},
		{name: "SyncTaken", set: func(v *view) { v.sync = syncView{held: true, h: syncHold{trigger: "sync_1", since: t0}, taken: true} },
			kind: proceed, check: func(t *testing.T, v verdict) {
				if !v.dropSync {
					t.Error("a taken sync's hold is not dropped")
				}
			}},
		{name: "SyncTriggerItself", set: func(v *view) { v.sync = syncView{held: true, h: syncHold{trigger: "t1", since: t0}} }, kind: proceed},
		{name: "Intake", set: func(v *view) { v.intakeID, v.intakeUntil = "t0", t0.Add(3*time.Second) },
			kind: hold, code: nudge.AgentBusy, until: t0.Add(3 * time.Second),
			check: func(t *testing.T, v verdict) {
				if v.poll != intakePoll {
					t.Errorf("poll %s, want %s", v.poll, intakePoll)
				}
			}},
		{name: "Busy", set: func(v *view) { v.readiness = nudge.Busy }, kind: hold, code: nudge.AgentBusy, until: t0.Add(10 * time.Minute)},
		{name: "BusyQueuesInput", set: func(v *view) { v.readiness, v.queuesInput, v.hasWorking, v.working = nudge.Busy, true, true, true },
			kind: proceed, check: func(t *testing.T, v verdict) {
				if !v.clocks.typedBusy {
					t.Error("a trigger let through to a working agent is not marked typedBusy")
				}
			}},
		{name: "Unknown", set: func(v *view) { v.readiness = nudge.Unknown }, kind: hold, code: nudge.AgentUnknown},
		{name: "Dialog", set: func(v *view) { v.readiness, v.queuesInput = nudge.NeedsConfirmation, true }, kind: hold, code: nudge.AgentNeedsConfirmation},
		{name: "BusyPastMaxHold", set: func(v *view) { v.readiness, v.clocks.holdStart = nudge.Busy, t0.Add(-10*time.Minute) },
			kind: fallback, code: nudge.DeferTimeout,
			check: func(t *testing.T, v verdict) {
				if !v.evidence {
					t.Error("an expired hold does not ask for the pane's last lines")
				}
			}},
		{name: "NoDetectors", set: func(v *view) { v.gates, v.busy, v.readiness = false, true, nudge.Busy }, kind: proceed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := decideView(t0)
			c.set(&v)
			got := decide(v)
			if got.kind != c.kind || got.code != c.code {
				t.Fatalf("got %d %s (%s), want %d %s", got.kind, got.code, got.why, c.kind, c.code)
			}
			if !c.until.IsZero() && !got.until.Equal(c.until) {
				t.Errorf("until %s, want %s", got.until, c.until)
			}
			if got.kind != proceed && got.why == "" {
				t.Error("a verdict that stops the trigger says no why")
			}
			if c.check != nil {
				c.check(t, got)
			}
		})
	}
}
