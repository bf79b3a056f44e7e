package inject

import (
	"errors"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// nextJob is a job typed once into a local runtime, under the default policy.
func nextJob(now time.Time) jobView {
	return jobView{
		windows: windows{now: now, maxDefer: time.Minute, maxHold: 10 * time.Minute},
		recheck: 5 * time.Second, retries: 2, backoff: []time.Duration{2 * time.Second, 4 * time.Second},
		t: nudge.Trigger{TriggerID: "t1", RuntimeID: "rt_w.a", State: nudge.StateQueued},
	}
}

// TestNext: next's step for each outcome of an attempt or an ack wait, with the clocks
// it leaves.
func TestNext(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	down := errors.New("no control connection")
	refused := &controlmode.CommandError{Cmd: "send-keys", Lines: []string{"not allowed"}}
	cases := []struct {
		name  string
		set   func(j *jobView)
		o     outcome
		kind  stepKind
		code  nudge.Code
		check func(t *testing.T, st step)
	}{
		{name: "Stopped", o: outcome{kind: oStopped}, kind: sNone},
		{name: "ConnDown", o: outcome{kind: oConnDown, err: down}, kind: sDefer,
			check: func(t *testing.T, st step) {
				if !st.clocks.connWait.Equal(t0) || !st.connWaits || !st.clocks.retryAt.Equal(t0.Add(connRetry)) || st.hold.kind != proceed {
					t.Errorf("connWait %s (began %v), retryAt %s, hold %d: want begun now, again in %s, no hold on the receipt",
						st.clocks.connWait, st.connWaits, st.clocks.retryAt, st.hold.kind, connRetry)
				}
			}},
		{name: "ConnDownRemote", set: func(j *jobView) { j.host, j.clocks.connWait = "box", t0.Add(-time.Second) },
			o: outcome{kind: oConnDown, err: down}, kind: sDefer,
			check: func(t *testing.T, st step) {
				if st.hold.code != nudge.HostUnreachable || !st.hold.until.Equal(t0.Add(59*time.Second)) || st.connWaits {
					t.Errorf("hold %s until %s: want HOST_UNREACHABLE until the wait's end", st.hold.code, st.hold.until)
				}
			}},
		{name: "ConnDownRemoteInjected", set: func(j *jobView) { j.host, j.t.State = "box", nudge.StateInjected },
			o: outcome{kind: oConnDown, err: down}, kind: sDefer,
			check: func(t *testing.T, st step) {
				if st.hold.kind != proceed {
					t.Error("an injected trigger's receipt was deferred while it waits for its host")
				}
			}},
		{name: "ConnDownPastMaxDefer", set: func(j *jobView) { j.clocks.connWait = t0.Add(-time.Minute) },
			o: outcome{kind: oConnDown, err: down}, kind: sFallback, code: nudge.TargetNotFound,
			check: func(t *testing.T, st step) {
				if !st.clocks.connWait.IsZero() {
					t.Error("the connection clock runs on into the fallback")
				}
			}},
		{name: "HostUnreachable", set: func(j *jobView) { j.host, j.clocks.connWait = "box", t0.Add(-time.Minute) },
			o: outcome{kind: oConnDown, err: down}, kind: sFallback, code: nudge.HostUnreachable},
		{name: "ConnUp", set: func(j *jobView) { j.clocks.connWait = t0.Add(-time.Second) },
			o: outcome{kind: oFound, connUp: true}, kind: sSubmitted,
			check: func(t *testing.T, st step) {
				if !st.clocks.connWait.IsZero() {
					t.Error("the connection clock runs on after the pane answered")
				}
			}},
		{name: "CopyMode", o: outcome{kind: oPaneHeld, v: verdict{kind: hold, code: nudge.OperatorBusy, why: "pane is in copy mode"}}, kind: sDefer,
			check: func(t *testing.T, st step) {
				if st.hold.code != nudge.OperatorBusy || !st.hold.until.Equal(t0.Add(time.Minute)) || !st.clocks.paneHold.Equal(t0) ||
					!st.clocks.retryAt.Equal(t0.Add(5*time.Second)) {
					t.Errorf("hold %s until %s, pane clock %s, retry %s", st.hold.code, st.hold.until, st.clocks.paneHold, st.clocks.retryAt)
				}
			}},
		{name: "CopyModePastMaxDefer", set: func(j *jobView) { j.clocks.paneHold = t0.Add(-time.Minute) },
			o: outcome{kind: oPaneHeld, v: verdict{kind: hold, code: nudge.OperatorBusy, why: "pane is in copy mode"}}, kind: sDefer,
			check: func(t *testing.T, st step) {
				if st.collision == nil || !st.clocks.collided || st.hold.until != t0.Add(10*time.Minute) {
					t.Errorf("collision %v, held until %s: want it reported, held for the person", st.collision, st.hold.until)
				}
			}},
		{name: "CopyModePastMaxHold", set: func(j *jobView) { j.clocks.paneHold, j.clocks.collided = t0.Add(-11*time.Minute), true },
			o: outcome{kind: oPaneHeld, v: verdict{kind: hold, code: nudge.OperatorBusy, why: "pane is in copy mode"}}, kind: sFailed, code: nudge.DeferTimeout},
		{name: "InputLineBusyPastMaxDefer", set: func(j *jobView) { j.clocks.paneHold = t0.Add(-time.Minute) },
			o: outcome{kind: oPaneHeld, v: verdict{kind: hold, code: nudge.InputLineBusy, why: "the input line holds t0"}}, kind: sFallback, code: nudge.DeferTimeout},
		{name: "ForcedPaneHeld", set: func(j *jobView) { j.t.ForceOverride, j.clocks.paneHold = true, t0.Add(-time.Hour) },
			o: outcome{kind: oPaneHeld, v: verdict{kind: hold, code: nudge.InputLineBusy, why: "the input line holds t0"}}, kind: sDefer},
		{name: "PaneDead", o: outcome{kind: oFallback, v: verdict{kind: fallback, code: nudge.PaneDead, why: "the pane's process has exited"}}, kind: sFallback, code: nudge.PaneDead},
		{name: "Pending", o: outcome{kind: oPending, pending: "t0"}, kind: sYield,
			check: func(t *testing.T, st step) {
				if st.pending != "t0" {
					t.Errorf("yields to %q", st.pending)
				}
			}},
		{name: "Acked", o: outcome{kind: oAcked, signal: "marker"}, kind: sAcked},
		{name: "Unshown", set: func(j *jobView) { j.t.Attempts, j.clocks.submitSeq = 1, 7 }, o: outcome{kind: oUnshown}, kind: sDefer,
			check: func(t *testing.T, st step) {
				if st.hold.code != nudge.AgentBusy || !st.clocks.unshownSince.Equal(t0) || !st.hold.until.Equal(t0.Add(10*time.Minute)) {
					t.Errorf("hold %s until %s since %s", st.hold.code, st.hold.until, st.clocks.unshownSince)
				}
			}},
		{name: "UnshownPastMaxHold", set: func(j *jobView) { j.clocks.submitSeq, j.clocks.unshownSince = 7, t0.Add(-10*time.Minute) },
			o: outcome{kind: oUnshown}, kind: sFallback, code: nudge.AckTimeout,
			check: func(t *testing.T, st step) {
				if st.clocks.submitSeq != 0 || !st.clocks.unshownSince.IsZero() {
					t.Error("the intake marks outlive the fallback")
				}
			}},
		{name: "Shown", set: func(j *jobView) { j.clocks.submitSeq, j.clocks.unshownSince = 7, t0.Add(-time.Second) },
			o: outcome{kind: oShown}, kind: sAckWait,
			check: func(t *testing.T, st step) {
				if !st.clocks.ackFrom.Equal(t0) || st.clocks.submitSeq != 0 || !st.clocks.unshownSince.IsZero() {
					t.Errorf("ackFrom %s: want the ack wait to count from now", st.clocks.ackFrom)
				}
			}},
		{name: "FoundUnrecorded", set: func(j *jobView) { j.ackNow = true }, o: outcome{kind: oFound, unrecorded: true}, kind: sSubmitted,
			check: func(t *testing.T, st step) {
				if !st.inject || !st.newAttempt || !st.ackNow || st.turn {
					t.Errorf("inject %v new %v ackNow %v turn %v: want the typing recorded, then acked, not counted again", st.inject, st.newAttempt, st.ackNow, st.turn)
				}
			}},
		{name: "FoundRecorded", o: outcome{kind: oFound}, kind: sSubmitted,
			check: func(t *testing.T, st step) {
				if st.inject || st.ackNow {
					t.Error("a recorded typing is recorded again")
				}
			}},
		{name: "Handed", set: func(j *jobView) { j.clocks.submitSeq, j.clocks.ackFrom = 7, t0 },
			o: outcome{kind: oHanded, backend: "codex-app-server", note: "handed"}, kind: sSubmitted,
			check: func(t *testing.T, st step) {
				if !st.inject || st.backend != "codex-app-server" || !st.turn || !st.retyped || st.clocks.submitSeq != 0 || !st.clocks.ackFrom.IsZero() {
					t.Errorf("%+v: want a new attempt by the channel, counted, its waits anew", st)
				}
			}},
		{name: "Typed", set: func(j *jobView) { j.clocks.submitSeq = 7 }, o: outcome{kind: oTyped, typedNow: true, timed: true}, kind: sGoOn,
			check: func(t *testing.T, st step) {
				if !st.newAttempt || !st.turn || !st.retyped || !st.timed || st.clocks.submitSeq != 0 || st.backend != nudge.BackendTmux {
					t.Errorf("%+v: want a new attempt, counted, its waits anew", st)
				}
			}},
		{name: "InComposerRecorded", set: func(j *jobView) { j.t.State = nudge.StateInjected }, o: outcome{kind: oTyped}, kind: sGoOn,
			check: func(t *testing.T, st step) {
				if st.newAttempt || st.retyped || !st.turn {
					t.Error("an envelope waiting in the composer for its Enter counted as a new attempt")
				}
			}},
		{name: "InComposerUnrecorded", o: outcome{kind: oTyped}, kind: sGoOn,
			check: func(t *testing.T, st step) {
				if !st.newAttempt {
					t.Error("a typing found in the composer and never recorded is not counted")
				}
			}},
		{name: "TypingConnDown", o: outcome{kind: oTyped, typedNow: true, connUp: true, err: down}, kind: sDefer,
			check: func(t *testing.T, st step) {
				if !st.maybeTyped || !st.clocks.connWait.Equal(t0) {
					t.Error("a typing cut by the connection is not looked for before the next")
				}
			}},
		{name: "KeysRefused", o: outcome{kind: oSendFailed, err: refused}, kind: sKeysRefused},
		{name: "TargetGone", o: outcome{kind: oSendFailed, err: &controlmode.CommandError{Cmd: "send-keys", Lines: []string{"can't find pane: %9"}}},
			kind: sFallback, code: nudge.TargetNotFound},
		// A typing refused by its pane guard waits as for a connection: the reconciler
		// marks a pane that is really gone offline, and the gate then falls back.
		{name: "PaneGoneTyping", o: outcome{kind: oSendFailed, err: &controlmode.PaneGoneError{Target: "%1", Pane: "%1", Dead: true}},
			kind: sDefer},
		{name: "AtShell", o: outcome{kind: oSendFailed, err: &controlmode.PaneGoneError{Target: "%1", Pane: "%1", PID: 9, Command: "zsh", Shell: true}},
			kind: sFallback, code: nudge.UnmanagedRuntime},
		{name: "SendFailedClosing", set: func(j *jobView) { j.closing = true }, o: outcome{kind: oSendFailed, err: refused}, kind: sNone},
		{name: "NotSubmitted", o: outcome{kind: oNotSubmitted}, kind: sFailed, code: nudge.SendKeysError},
		{name: "Submitted", set: func(j *jobView) { j.t.State = nudge.StateInjected }, o: outcome{kind: oSubmitted, submitSeq: 9, queued: true, note: "queued"}, kind: sSubmitted,
			check: func(t *testing.T, st step) {
				if st.clocks.submitSeq != 9 || !st.queued || st.note != "queued" || st.inject || st.ackNow {
					t.Errorf("%+v", st)
				}
			}},
		{name: "AckTimeoutRetry", set: func(j *jobView) { j.t.Attempts = 1 }, o: outcome{kind: oAckTimeout}, kind: sRetry,
			check: func(t *testing.T, st step) {
				if st.wait != 2*time.Second || !st.clocks.retryAt.Equal(t0.Add(2*time.Second)) {
					t.Errorf("retry after %s at %s", st.wait, st.clocks.retryAt)
				}
			}},
		{name: "AckTimeoutSecondRetry", set: func(j *jobView) { j.t.Attempts = 2 }, o: outcome{kind: oAckTimeout}, kind: sRetry,
			check: func(t *testing.T, st step) {
				if st.wait != 4*time.Second {
					t.Errorf("retry after %s", st.wait)
				}
			}},
		{name: "AckTimeoutSpent", set: func(j *jobView) { j.t.Attempts = 3 }, o: outcome{kind: oAckTimeout}, kind: sFallback, code: nudge.AckTimeout},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := nextJob(t0)
			if c.set != nil {
				c.set(&j)
			}
			st := next(j, c.o)
			if st.kind != c.kind || st.code != c.code {
				t.Fatalf("got step %d %s (%s), want %d %s", st.kind, st.code, st.why, c.kind, c.code)
			}
			if (st.kind == sFallback || st.kind == sFailed) && st.why == "" {
				t.Error("a step that ends the live path says no why")
			}
			if c.check != nil {
				c.check(t, st)
			}
		})
	}
}
