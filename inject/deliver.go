package inject

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/trace"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// typist types a trigger into its runtime's pane and confirms that the agent took it: the
// look at the pane, the look for an earlier typing (a prompt is never typed twice), the
// guarded typing of the sanitized envelope, the echo wait, Enter and its one repair, and
// the check that the prompt left the composer. It keeps no state of its own: what it
// knows of a pane is on the lane (cursor row, output count, clean) and of a trigger on
// its job. It runs on a lane's goroutine, or on a request's for an inline typing
// (lanes.typeInline), and starts no goroutine but ackedOrDone's, which ends with the
// wait it serves. It hands a typed trigger to the finisher, a held one back to the lanes.
type typist struct {
	*core
	lanes *lanes
	fin   *finisher
}

// attemptDetail is what an attempt's audit record says about it.
type attemptDetail struct {
	Attempt                int    `json:"attempt"`
	Target                 string `json:"target"`
	Typed                  bool   `json:"typed"`
	EchoSeen               bool   `json:"echo_seen"`
	Repaired               bool   `json:"enter_repaired,omitempty"`
	Composer               string `json:"composer,omitempty"`
	ForceOverrideRequested bool   `json:"force_override_requested"`
	ForceOverrideApplied   bool   `json:"force_override_applied"`
	OverrideIntent         string `json:"override_intent,omitempty"`
	OverrideReasonPrefix   string `json:"override_reason_prefix,omitempty"`
	CollisionGate          string `json:"collision_gate"`
}

// deliver types j's envelope into the runtime's pane, presses Enter once the echo has
// settled, and confirms that the prompt left the composer.
func (ty *typist) deliver(l *lane, j *job, rt nudge.Runtime) {
	conn, err := ty.deps.Conn(rt.WorkspaceID)
	if err != nil {
		ty.lanes.awaitConn(l, j, err)
		return
	}
	target := paneTarget(rt)
	d := ty.detail(j, rt, target)
	pending, done := ty.lookAtPane(l, j, conn, target)
	if done || ty.answered(l, j) {
		return
	}
	reg := trace.StartRegion(j.traceCtx(), "deliver.look")
	f, err := ty.lookBeforeTyping(ty.ctx, j, conn, target, rt)
	reg.End()
	if err != nil {
		ty.lanes.awaitConn(l, j, err)
		return
	}
	if pending == j.id() { // typed by an earlier attempt, only Enter is missing
		f = foundInComposer
	}
	j.connWait = time.Time{}
	switch f {
	case foundUnrecorded:
		ty.markInjected(j, d, true) // an earlier incarnation typed it and died before recording
		fallthrough
	case foundSubmitted:
		ty.markSubmitted(j, d, "already in the pane's history")
		return
	}
	if f != foundInComposer && ty.viaChannel(l, j, rt, d) {
		return
	}
	ty.typeInto(l, j, conn, target, rt, d, f == foundInComposer)
}

// lookAtPane makes the pane check before typing, when one is needed (needsPaneCheck), and
// returns the trigger whose envelope waits unentered at the cursor (pending). done says
// that j went elsewhere instead: behind that trigger (yieldTo), held, or to the fallback
// chain (afterPaneCheck).
func (ty *typist) lookAtPane(l *lane, j *job, conn Sender, target string) (pending string, done bool) {
	var v verdict
	var stop bool
	if ty.needsPaneCheck(l, j) {
		reg := trace.StartRegion(j.traceCtx(), "deliver.pane-check")
		v, stop, pending, _ = paneCheck(ty.ctx, conn, target, l)
		reg.End()
	}
	l.clean.Store(false) // until this delivery is confirmed
	if !stop && pending != "" && pending != j.id() {
		// Another trigger's envelope waits unentered in the input line (its daemon died
		// before Enter, or its Enter was refused): typing after it would merge the two.
		// If that trigger is still in flight here, it goes first (it needs only Enter).
		if ty.yieldTo(l, j, pending) {
			return pending, true
		}
		v, stop = verdict{kind: hold, code: nudge.InputLineBusy, why: "the input line holds trigger " + pending + "'s prompt, never entered"}, true
	}
	if stop {
		ty.afterPaneCheck(l, j, v)
		return pending, true
	}
	return pending, false
}

// answered reports whether j must not be typed (again) because the agent has it: acked
// already (then finished), or, for a retry, still taking in the prompt it took out of
// its composer (held, or its ack wait started again).
func (ty *typist) answered(l *lane, j *job) bool {
	if j.record().Attempts > 0 {
		// A retry: the agent may have answered during the backoff, or drawn its marker
		// in a way the stream did not show. A prompt is never given twice to an agent
		// that answered.
		if sig, ok := ty.fin.ackedMeanwhile(j); ok {
			ty.fin.finishAcked(j, sig)
			return true
		}
		if sig, ok := ty.fin.inRecord(j); ok {
			ty.fin.finishAcked(j, sig)
			return true
		}
		if j.submitSeq != 0 && l.outSeq.Load() == j.submitSeq {
			ty.holdUnshown(l, j)
			return true
		}
		if !j.unshownSince.IsZero() {
			ty.shownAtLast(j)
			return true
		}
	}
	if ty.deps.Acks != nil {
		ty.deps.Acks.Expect(j.record())
		// The agent's record may show it has the prompt already (a daemon restarted
		// between typing and recording it): it is not typed again.
		if sig, ok := ty.fin.ackedNow(j); ok {
			ty.fin.finishAcked(j, sig)
			return true
		}
	}
	return false
}

// typeInto types j's envelope into the pane (unless typed: it waits in the composer
// already) and goes on with afterTyping, on the lane's goroutine (a typing on a
// request's goroutine leaves that to the lane as l.cont).
func (ty *typist) typeInto(l *lane, j *job, conn Sender, target string, rt nudge.Runtime, d attemptDetail, typed bool) {
	ty.lanes.takeTurn(j)
	ty.handed(j, rt)
	if ty.deps.Gates != nil {
		ty.deps.Gates.Injecting(rt.RuntimeID, ty.cfg.Now().Add(ty.cfg.EchoTimeout+ty.cfg.SubmitTimeout))
	}
	seq := l.outSeq.Load()
	var typeErr error
	if !typed {
		reg := trace.StartRegion(j.traceCtx(), "deliver.type")
		typeErr = ty.typeEnvelope(ty.ctx, conn, j, target, rt)
		reg.End()
		if l.inline {
			// Typed from the request's goroutine (typeInline): the lane's goroutine
			// does the rest (the echo wait, Enter, the confirmation).
			l.cont = func() { ty.afterTyping(l, j, conn, target, rt, d, seq, typed, typeErr) }
			return
		}
	}
	ty.afterTyping(l, j, conn, target, rt, d, seq, typed, typeErr)
}

// afterTyping is deliver from the typing on: the typing's outcome (err), the echo wait,
// Enter and the confirmation that the prompt left the composer.
func (ty *typist) afterTyping(l *lane, j *job, conn Sender, target string, rt nudge.Runtime, d attemptDetail, seq uint64, typed bool, err error) {
	ctx := ty.ctx
	if !typed {
		j.endTask()
		j.submitSeq, j.unshownSince, j.ackFrom = 0, time.Time{}, time.Time{} // typed again: a new wait
		if err != nil {
			j.maybeTyped = true // some of it may have reached the pane
			ty.sendFailed(l, j, err)
			return
		}
	}
	d.Typed = !typed
	// Only Enter is missing for an envelope found in the composer: it is one attempt with
	// the typing that put it there, recorded already if the state says injected.
	ty.markInjected(j, d, !typed || j.record().State != nudge.StateInjected)
	if typed {
		d.EchoSeen = true // on screen already: nothing new will echo
	} else {
		prof, _ := ty.deps.Runtimes.Profile(rt.Agent)
		d.EchoSeen = l.settle(ctx.Done(), ty.cfg.Now, seq, prof.SubmitSettle, ty.cfg.EchoTimeout)
	}
	ty.submit(l, j, conn, target, rt, d)
}

func paneTarget(rt nudge.Runtime) string {
	if rt.PaneID != "" {
		return rt.PaneID
	}
	return rt.Target
}

func (ty *typist) detail(j *job, rt nudge.Runtime, target string) attemptDetail {
	t := j.record()
	d := attemptDetail{Attempt: t.Attempts + 1, Target: target, CollisionGate: "enforced"}
	if ty.deps.Gates == nil {
		d.CollisionGate = "not_evaluated"
	}
	if t.ForceOverride {
		d.ForceOverrideRequested, d.ForceOverrideApplied = true, true
		d.CollisionGate = "bypassed"
		d.OverrideIntent = t.OverrideIntent
		if d.OverrideIntent == "" {
			d.OverrideIntent = "coordinator_override"
		}
		d.OverrideReasonPrefix = d.OverrideIntent + ":"
	}
	return d
}

// yieldTo puts the in-flight trigger id at the front of l, ahead of j, and reports
// whether it could.
func (ty *typist) yieldTo(l *lane, j *job, id string) bool {
	pj := ty.inflight(id)
	if pj == nil || !l.remove(pj) { // only a trigger waiting in this lane, not one in an ack wait or a fallback
		return false
	}
	pj.maybeTyped, pj.retryAt = true, time.Time{}
	l.push(j, true)
	l.push(pj, true)
	return true
}

// needsPaneCheck says whether to ask tmux about the pane before typing. It may be skipped
// only on the hot path's best case: the lane's last delivery was confirmed (nothing of
// ours is left in the input line), nothing may have been typed for this trigger before,
// the detectors watch for copy mode and pane death, and the text goes by send-keys (a
// paste into a dead pane crashes tmux 3.3a, so a paste is always preceded by the check).
func (ty *typist) needsPaneCheck(l *lane, j *job) bool {
	return !l.clean.Load() || j.maybeTyped || j.record().Attempts > 0 || ty.deps.Gates == nil ||
		NeedsPaste(j.envelope)
}

// afterPaneCheck handles a pane that cannot take input now.
func (ty *typist) afterPaneCheck(l *lane, j *job, v verdict) {
	if v.kind == waitConn {
		ty.lanes.awaitConn(l, j, errors.New(v.why))
		return
	}
	if v.kind == hold {
		// Its own clock: the collision gate resets deferStart whenever the operator is idle,
		// which would keep this hold from ever timing out.
		now := ty.cfg.Now()
		if j.paneHold.IsZero() {
			j.paneHold = now
		}
		if v.code == nudge.OperatorBusy && now.Sub(j.paneHold) >= ty.cfg.MaxDefer && !j.record().ForceOverride {
			// A person's (copy mode): held for them, never an agent beside their pane.
			if v = ty.lanes.operatorHold(j, l.id, j.paneHold, time.Time{}, now, v.why); v.kind == fail {
				ty.fin.finishFailed(j, v.code, v.why)
				return
			}
			ty.markDeferred(j, v, now)
			j.retryAt = now.Add(ty.cfg.DeferRecheck)
			l.push(j, true)
			return
		}
		if now.Sub(j.paneHold) >= ty.cfg.MaxDefer && !j.record().ForceOverride {
			ty.fin.startFallback(j, nudge.DeferTimeout, v.why)
			return
		}
		v.until = j.paneHold.Add(ty.cfg.MaxDefer)
		ty.markDeferred(j, v, now)
		j.retryAt = now.Add(ty.cfg.DeferRecheck)
		l.push(j, true)
		return
	}
	ty.fin.startFallback(j, v.code, v.why)
}

// lookBeforeTyping checks, for a trigger an earlier attempt or incarnation may have
// typed, whether its envelope is still in the composer (then only Enter is needed) or
// already in the pane's history (then it was submitted). The history holds one echo of
// the envelope per typing: more echoes than attempts whose typing was recorded before
// this one means a typing that was never recorded (the daemon died between typing and
// recording: foundUnrecorded). A retry after an ack timeout finds only the
// recorded echoes and types again on purpose. err is a control connection that went
// down under the capture (the pane may be fine: try again later).
func (ty *typist) lookBeforeTyping(ctx context.Context, j *job, conn Sender, target string, rt nudge.Runtime) (found, error) {
	t := j.record()
	if !j.maybeTyped && t.Attempts == 0 {
		return notFound, nil
	}
	needle := "id=" + t.TriggerID
	r, err := conn.Do(ctx, "capture-pane -p -J -S -500 -t "+quote(target))
	if err != nil || r == nil {
		if connDown(err) {
			return notFound, err
		}
		return notFound, nil
	}
	echoes := 0
	for _, line := range r.Lines {
		if containsID(line, needle) {
			echoes++
		}
	}
	if echoes == 0 {
		// Never typed (or scrolled far away: type again), unless the agent folded it into
		// a paste placeholder, which the history does not show as the text.
		if ty.deps.Gates != nil {
			if c, err := ty.deps.Gates.Composer(ctx, rt); err == nil && ty.holds(rt, c, j) {
				return foundInComposer, nil
			}
		}
		return notFound, nil
	}
	if ty.deps.Gates != nil {
		if c, err := ty.deps.Gates.Composer(ctx, rt); err == nil && ty.holds(rt, c, j) {
			return foundInComposer, nil
		}
	}
	done := t.Attempts // attempts whose typing was recorded and whose fate is known
	if t.State == nudge.StateInjected {
		done-- // the last one was typed; was it submitted? Not in the composer: yes
	}
	switch {
	case echoes <= done:
		return notFound, nil
	case t.State != nudge.StateInjected:
		return foundUnrecorded, nil
	}
	return foundSubmitted, nil
}

// found is what lookBeforeTyping found of a trigger in its pane.
type found uint8

const (
	notFound        found = iota // not in the pane (or only its recorded typings): type it
	foundInComposer              // typed and waiting in the composer: only Enter is missing
	foundSubmitted               // in the pane's history: submitted, its typing recorded
	foundUnrecorded              // in the history, typed by an incarnation that died before recording it
)

// containsID reports whether s holds needle ("id=X") followed by a non-id byte or the end.
func containsID(s, needle string) bool {
	for {
		i := strings.Index(s, needle)
		if i < 0 {
			return false
		}
		rest := s[i+len(needle):]
		if rest == "" || !nudge.IsIDByte(rest[0]) {
			return true
		}
		s = rest
	}
}

// shellOK reports whether rt's pane may be typed into while a shell holds its
// foreground: only a runtime whose profile drives a shell (panes.Profile.DrivesShell).
func (ty *typist) shellOK(rt nudge.Runtime) bool {
	prof, ok := ty.deps.Runtimes.Profile(rt.Agent)
	return ok && prof.DrivesShell()
}

func (ty *typist) typeEnvelope(ctx context.Context, conn Sender, j *job, target string, rt nudge.Runtime) error {
	if j.envelope == "" {
		return errors.New("nothing to type: the trigger has no envelope")
	}
	buf := "nudge-" + strings.Map(func(r rune) rune {
		if r < 128 && nudge.IsIDByte(byte(r)) && r != ':' && r != '/' && r != '@' {
			return r
		}
		return '_'
	}, j.id())
	cmds, err := TypeCommandsInto(target, rt.PID, ty.shellOK(rt), j.envelope, buf)
	if err != nil {
		return err
	}
	if !j.received.IsZero() {
		nudge.Publish(ty.deps.Bus, nudge.TriggerTyped{TriggerID: j.id(), Took: time.Since(j.received)})
		j.received = time.Time{}
	}
	if il, ok := ty.deps.Gates.(InputLine); ok {
		il.Typed(j.record().RuntimeID, j.envelope)
	}
	_, err = conn.DoAll(ctx, cmds...)
	if errors.Is(err, controlmode.ErrPaneGone) && len(cmds) > 1 {
		conn.Do(ctx, "delete-buffer -b "+quote(buf)) // the paste did not take it
	}
	return err
}

// markInjected records that j's envelope is in the pane; newAttempt counts a typing
// (false: only the Enter of an attempt already recorded is still to come).
func (ty *typist) markInjected(j *job, d attemptDetail, newAttempt bool) {
	ty.markInjectedVia(j, d, newAttempt, nudge.BackendTmux)
}

// markInjectedVia is markInjected for a prompt given to the agent by backend.
func (ty *typist) markInjectedVia(j *job, d attemptDetail, newAttempt bool, backend string) {
	now := ty.cfg.Now()
	rec := j.update(now, func(t *nudge.Trigger) {
		t.State = nudge.StateInjected
		t.InjectedAt = tp(now)
		if newAttempt {
			t.Attempts++
		}
		t.DeliveryBackend = backend
		j.settleCause(t, "")
		t.DeferredUntil = nil
		t.Result = resultFor(t)
	})
	j.maybeTyped = true
	j.decide()
	ty.transition(rec.RuntimeID, nudge.StatusTriggering, "trigger "+rec.TriggerID)
	ty.lastTrigger(rec)
	ty.persist(j, ty.auditDetail("trigger_sent", rec, "", d))
}

func (ty *typist) sendFailed(l *lane, j *job, err error) {
	var ce *controlmode.CommandError
	code := nudge.SendKeysError
	switch {
	case errors.As(err, &ce) && strings.Contains(ce.Error(), "can't find"):
		code = nudge.TargetNotFound
	}
	var gone *controlmode.PaneGoneError
	if errors.As(err, &gone) {
		code = nudge.PaneDead
		if gone.Pane == "" {
			code = nudge.TargetNotFound
		}
	}
	if ty.ctx.Err() != nil {
		return // shutting down: the next Open resumes it
	}
	if gone != nil && atShell(gone) {
		// Not a connection that is down: the pane is there, with a shell at its front.
		ty.fin.startFallback(j, nudge.UnmanagedRuntime, atShellWhy(gone))
		return
	}
	if connDown(err) {
		ty.lanes.awaitConn(l, j, err)
		return
	}
	if code == nudge.SendKeysError && errors.As(err, &ce) {
		// tmux refused the keys: a relaunch of the agent would not change that (seed 001
		// §9 triggering → failed, retrying → failed).
		ty.fin.keysRefused(j, err)
		return
	}
	ty.fin.startFallback(j, code, err.Error())
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(fmt.Sprintf("%q", err.Error()))
	}
	return b
}

// settleCause clears a live delivery's hold or retry code once the prompt moves on, and
// sets the receipt's message to note. A fallback's live delivery (into the runtime the
// fallback started or redirected to) puts back the code and message that sent the prompt
// there instead, with note added, so the receipt still says why. Called inside j.update.
func (j *job) settleCause(t *nudge.Trigger, note string) {
	if t.Fallback == "" || j.cause.code == "" {
		t.ErrorCode, t.Message = "", note
		return
	}
	t.ErrorCode, t.Message = j.cause.code, j.cause.why
	if note != "" {
		t.Message += "; " + note
	}
}
