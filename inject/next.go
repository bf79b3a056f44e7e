package inject

import (
	"errors"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// next is the lane's third step: a pure function of a job (as jobView shows it) and what
// came of its attempt or of its ack wait (outcome), saying what the lane does with it
// (step): record the typing and go on to Enter, wait for the ack, retry, hold it again,
// let another trigger go first, hand it to the fallback chain, or close it. The lane
// applies the step (Pipeline.apply): the store, the audit, the lane's queue, the
// goroutines.

// outcome is what an attempt (runAttempt), or an ack wait (awaitAck), found.
type outcome struct {
	kind       outcomeKind
	v          verdict       // oPaneHeld, oFallback: the pane's verdict
	err        error         // oConnDown, oSendFailed, oTyped (the typing failed)
	pending    string        // oPending: the trigger whose envelope waits at the cursor
	signal     string        // oAcked
	backend    string        // oHanded: the channel
	note       string        // oHanded, oSubmitted: the receipt's note
	unrecorded bool          // oFound: typed by an incarnation that died before recording it
	queued     bool          // oSubmitted: the agent holds it in its own queue
	submitSeq  uint64        // oSubmitted: the pane's output count when a TUI gave the prompt up
	typedNow   bool          // oTyped: typed by this attempt (false: it waited in the composer)
	timed      bool          // oTyped: the request's time was published (nudge.TriggerTyped)
	connUp     bool          // the pane answered past the first look: a wait for a connection ends
	detail     attemptDetail // what the attempt's audit record says
	next       attempt       // oTyped: the attempt's Enter stage
}

// outcomeKind is what an attempt or an ack wait ended with.
type outcomeKind uint8

const (
	oStopped      outcomeKind = iota // the pipeline is closing: nothing to record (the next Open resumes it)
	oConnDown                        // no control connection (err): the pane may be fine
	oPaneHeld                        // the pane cannot take input now (v: copy mode, an unentered envelope)
	oPending                         // another trigger's envelope waits unentered at the cursor
	oFallback                        // the pane is gone, dead or replaced (v)
	oAcked                           // the agent has the prompt (signal)
	oUnshown                         // a retry of a prompt a TUI took and has drawn nothing since
	oShown                           // ... that the TUI drew at last
	oFound                           // in the pane's history already: submitted
	oHanded                          // handed to the agent through its channel
	oTyped                           // typed (or waiting in the composer): the Enter stage follows
	oSendFailed                      // tmux did not take the keys (err)
	oNotSubmitted                    // still in the composer after the repair Enter
	oSubmitted                       // left the composer
	oAckTimeout                      // no ack in the ack wait (the record read, a channel's queue withdrawn)
)

// windows are the policy's clocks as a step reads them.
type windows struct {
	now      time.Time
	maxDefer time.Duration
	maxHold  time.Duration
}

// jobView is what next reads of a job.
type jobView struct {
	windows
	recheck time.Duration   // Config.DeferRecheck
	retries int             // Config.AckRetries
	backoff []time.Duration // Config.Backoff
	t       nudge.Trigger
	clocks  jobClocks
	host    string // its runtime's host ("": local)
	closing bool   // the pipeline is closing
	ackNow  bool   // submitted is its ack: nothing acks, or its runtime's profile says so
}

// step is what the lane does with a job after an outcome.
type step struct {
	kind      stepKind
	code      nudge.Code // sFailed, sFallback
	why       string     // sFailed, sFallback
	signal    string     // sAcked
	err       error      // sKeysRefused; sDefer for a connection that is down
	pending   string     // sYield
	hold      verdict    // sDefer: the hold the receipt shows (kind proceed: the receipt stays as it is)
	collision *Collision // an operator's collision to report first
	clocks    jobClocks  // the job's clocks after the step
	wait      time.Duration

	// Recording a delivery.
	inject     bool   // sSubmitted: record injected first
	newAttempt bool   // the typing counts as an attempt
	backend    string // the receipt's delivery_backend
	note       string // sSubmitted: the receipt's message
	queued     bool   // sSubmitted: the agent queued it
	ackNow     bool   // sSubmitted: submitted is its ack

	turn       bool // count the delivery for the rate limiter and the loop guard
	retyped    bool // typed anew: its trace task ends
	maybeTyped bool // some of it may have reached the pane: look before typing again
	timed      bool // its request's time to the typing was reported
	connWaits  bool // sDefer: it began waiting for a control connection now
}

// stepKind says what the lane does.
type stepKind uint8

const (
	sNone        stepKind = iota // nothing (shutting down: the next Open resumes it)
	sGoOn                        // record the typing (injected), then run the attempt's Enter stage
	sSubmitted                   // record submitted, then close it acked (ackNow) or wait for its ack
	sAcked                       // close it acked (signal)
	sFailed                      // close it failed (code, why)
	sFallback                    // hand it to the fallback chain (code, why)
	sKeysRefused                 // tmux refused its keys: fail it, and its runtime (err)
	sDefer                       // record the hold, if any, and put it back at its lane's front until clocks.retryAt
	sYield                       // let trigger pending, whose envelope waits at the cursor, go first
	sAckWait                     // the agent drew at last: wait for its ack again, from now
	sRetry                       // no ack: type it again after wait
)

// next says what the lane does with job j after outcome o.
func next(j jobView, o outcome) step {
	st := step{clocks: j.clocks}
	if o.connUp {
		st.clocks.connWait = time.Time{}
	}
	switch o.kind {
	case oStopped:
		return st
	case oConnDown:
		return connStep(j, st, o.err)
	case oPaneHeld:
		return paneHeld(j, st, o.v)
	case oFallback:
		st.kind, st.code, st.why = sFallback, o.v.code, o.v.why
	case oPending:
		st.kind, st.pending = sYield, o.pending
	case oAcked:
		st.kind, st.signal = sAcked, o.signal
	case oUnshown:
		return unshown(j, st)
	case oShown:
		// The agent is showing the prompt it took only now: the wait for its ack starts
		// again from now (a retry comes after a whole AckTimeout of that) instead of
		// typing it again at once.
		st.kind = sAckWait
		st.clocks.submitSeq, st.clocks.unshownSince, st.clocks.ackFrom = 0, time.Time{}, j.now
	case oFound:
		st.kind, st.inject, st.newAttempt, st.backend = sSubmitted, o.unrecorded, true, nudge.BackendTmux
		st.note, st.ackNow = "already in the pane's history", j.ackNow
	case oHanded:
		retyped(&st)
		st.turn = true
		st.kind, st.inject, st.newAttempt, st.backend = sSubmitted, true, true, o.backend
		st.note, st.ackNow = o.note, j.ackNow
	case oTyped:
		st.turn = true
		if o.typedNow {
			retyped(&st)
			st.timed = o.timed
			if o.err != nil {
				st.maybeTyped = true // some of it may have reached the pane
				return sendFailed(j, st, o.err)
			}
		}
		// Only Enter is missing for an envelope found in the composer: it is one attempt
		// with the typing that put it there, recorded already if the state says injected.
		st.kind, st.backend = sGoOn, nudge.BackendTmux
		st.newAttempt = o.typedNow || j.t.State != nudge.StateInjected
	case oSendFailed:
		return sendFailed(j, st, o.err)
	case oNotSubmitted:
		st.kind, st.code = sFailed, nudge.SendKeysError
		st.why = "prompt typed but not submitted: the composer still holds it after a repair Enter"
	case oSubmitted:
		if o.submitSeq != 0 {
			st.clocks.submitSeq = o.submitSeq
		}
		st.kind, st.note, st.queued, st.ackNow = sSubmitted, o.note, o.queued, j.ackNow
	case oAckTimeout:
		wait, again := retryAfter(j.t.Attempts, j.retries, j.backoff)
		if !again {
			st.kind, st.code, st.why = sFallback, nudge.AckTimeout, "no ack after retries"
			return st
		}
		st.kind, st.wait = sRetry, wait
		st.clocks.retryAt = j.now.Add(wait)
	}
	return st
}

// retyped starts a new wait: a typing anew ends the trace task, and the waits for the
// last typing's intake and ack are over.
func retyped(st *step) {
	st.retyped = true
	st.clocks.submitSeq, st.clocks.unshownSince, st.clocks.ackFrom = 0, time.Time{}, time.Time{}
}

// connStep puts a job whose control connection is down back at the front of its lane, to
// be tried again once the connection is up: a live agent must not be replaced by a
// fallback launch because the daemon restarted or tmux -C is being redialled. A pane that
// is really gone is marked offline by the reconciler, and the gate then falls back with
// PANE_DEAD; a connection still down after MaxDefer falls back with TARGET_NOT_FOUND. The
// job may have been typed in part: the next attempt looks in the pane before typing.
//
// For a workspace on another host the wait is a visible hold: a trigger not yet typed
// is deferred with HOST_UNREACHABLE and the deadline, and past MaxDefer it takes the
// fallback chain with that code. One already injected keeps its state while it waits.
func connStep(j jobView, st step, err error) step {
	now := j.now
	if st.clocks.connWait.IsZero() {
		st.clocks.connWait, st.connWaits = now, true
	}
	if now.Sub(st.clocks.connWait) >= j.maxDefer {
		st.clocks.connWait = time.Time{}
		st.kind, st.code, st.why = sFallback, nudge.TargetNotFound, "no control connection: "+err.Error()
		if j.host != "" {
			st.code, st.why = nudge.HostUnreachable, "host unreachable: "+j.host+": "+err.Error()
		}
		return st
	}
	st.kind, st.err = sDefer, err
	if s := j.t.State; j.host != "" && (s == nudge.StateQueued || s == nudge.StateDeferred) {
		st.hold = verdict{kind: hold, code: nudge.HostUnreachable,
			why: "host unreachable: " + j.host + " (redialling)", until: st.clocks.connWait.Add(j.maxDefer)}
	}
	st.clocks.retryAt = now.Add(connRetry)
	return st
}

// paneHeld holds a job whose pane cannot take input now (copy mode, another trigger's
// envelope left unentered), on its own clock: the collision gate resets its clock
// whenever the operator is idle, which would keep this hold from ever timing out.
func paneHeld(j jobView, st step, v verdict) step {
	now := j.now
	if st.clocks.paneHold.IsZero() {
		st.clocks.paneHold = now
	}
	since := st.clocks.paneHold
	past := now.Sub(since) >= j.maxDefer && !j.t.ForceOverride
	switch {
	case past && v.code == nudge.OperatorBusy:
		// A person's (copy mode): held for them, never an agent beside their pane.
		v = operatorHold(j.windows, &st.clocks, j.t, j.t.RuntimeID, since, time.Time{}, v.why)
		if v.kind == fail {
			st.kind, st.code, st.why = sFailed, v.code, v.why
			return st
		}
		st.collision = v.collision
	case past:
		st.kind, st.code, st.why = sFallback, nudge.DeferTimeout, v.why
		return st
	default:
		v.until = since.Add(j.maxDefer)
	}
	st.kind, st.hold = sDefer, v
	st.clocks.retryAt = now.Add(j.recheck)
	return st
}

// unshown holds a retry (after an ack timeout) of a prompt that a TUI took out of its
// composer when the pane has drawn nothing at all since: the agent has not shown the
// prompt yet, nor a busy sign, nor an answer; it is still taking it in (Gemini CLI spends
// 10 to 30 s and more with a 63 KiB paste before it draws the prompt or a spinner, and
// sends it to its model only then). Typing it again would give it twice: the agent would
// take the second copy as its next prompt. The retry waits (deferred, AGENT_BUSY, the
// receipt saying why) until the pane draws, then goes through the gates as any retry does
// (busy: deferred; the marker or an ack meanwhile: acked); past MaxHold of silence it
// (the hold clock) falls back with ACK_TIMEOUT, never retyped.
func unshown(j jobView, st step) step {
	now := j.now
	if st.clocks.unshownSince.IsZero() {
		st.clocks.unshownSince = now
	}
	if now.Sub(st.clocks.unshownSince) >= j.maxHold {
		st.clocks.submitSeq, st.clocks.unshownSince = 0, time.Time{}
		st.kind, st.code = sFallback, nudge.AckTimeout
		st.why = "no ack, and the agent drew nothing after it took the prompt out of its composer: not typed again"
		return st
	}
	st.kind = sDefer
	st.hold = verdict{kind: hold, code: nudge.AgentBusy, until: st.clocks.unshownSince.Add(j.maxHold),
		why: "no ack yet, but the agent took the prompt out of its composer and has drawn nothing since (still reading it): not typed again"}
	st.clocks.retryAt = now.Add(j.recheck)
	return st
}

// sendFailed is the step after tmux did not take a typing or an Enter.
func sendFailed(j jobView, st step, err error) step {
	var ce *controlmode.CommandError
	code := nudge.SendKeysError
	if errors.As(err, &ce) && strings.Contains(ce.Error(), "can't find") {
		code = nudge.TargetNotFound
	}
	var gone *controlmode.PaneGoneError
	if errors.As(err, &gone) {
		code = nudge.PaneDead
		if gone.Pane == "" {
			code = nudge.TargetNotFound
		}
	}
	switch {
	case j.closing:
		st.kind = sNone // shutting down: the next Open resumes it
	case gone != nil && atShell(gone):
		// Not a connection that is down: the pane is there, with a shell at its front.
		st.kind, st.code, st.why = sFallback, nudge.UnmanagedRuntime, atShellWhy(gone)
	case connDown(err):
		return connStep(j, st, err)
	case code == nudge.SendKeysError && errors.As(err, &ce):
		// tmux refused the keys: a relaunch of the agent would not change that (seed 001
		// §9 triggering → failed, retrying → failed).
		st.kind, st.err = sKeysRefused, err
	default:
		st.kind, st.code, st.why = sFallback, code, err.Error()
	}
	return st
}
