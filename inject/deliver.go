package inject

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/trace"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
	if ty.deps.Gates != nil {
		ty.deps.Gates.Injecting(rt.RuntimeID, ty.cfg.Now().Add(ty.cfg.EchoTimeout+ty.cfg.SubmitTimeout))
	}
	seq := l.outSeq.Load()
	var typeErr error
	if !typed {
		reg := trace.StartRegion(j.traceCtx(), "deliver.type")
		typeErr = ty.typeEnvelope(ty.ctx, conn, j, target, rt.PID)
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

// paneCheck asks tmux, in one round trip, whether the pane exists, is alive and is not in
// a mode, and which envelope (if any) ends on the cursor's line: one typed but never
// entered. pending is that envelope's trigger id.
//
// It captures the screen from a few rows above where the lane last saw the cursor to the
// bottom, not the whole screen: in the same server step as the cursor's position, so the
// two agree. Only when the cursor is above that range, or an envelope ends at the cursor
// and its start is above it, does it look again at the whole screen. (A full capture of
// a 400x50 screen cost tmux ~150 µs of CPU against ~40 µs for a dozen rows, and the
// daemon the parsing of every row: the largest share of tmux's work per trigger after
// the typing itself.)
//
// seen is the pane's identity in the same server step (its id, dead or not, its pid):
// the final check after Enter reads it instead of asking tmux again.
func paneCheck(ctx context.Context, conn Sender, target string, l *lane) (v verdict, stop bool, pending string, seen []string) {
	from := -1 // the whole screen
	if l != nil {
		if y := int(l.cursorY.Load()); y >= 0 {
			from = max(0, y-cursorMargin)
		}
	}
	v, stop, pending, seen, again := paneCheckFrom(ctx, conn, target, l, from)
	if again {
		v, stop, pending, seen, _ = paneCheckFrom(ctx, conn, target, l, -1)
	}
	return v, stop, pending, seen
}

// cursorMargin is how many rows above the cursor's last known row paneCheck captures: a
// composer that shrinks after Enter moves the cursor up a few rows.
const cursorMargin = 8

// paneCheckFrom is paneCheck with the capture starting at screen row from (-1: the whole
// screen). again says that rows above from are needed to decide.
func paneCheckFrom(ctx context.Context, conn Sender, target string, l *lane, from int) (v verdict, stop bool, pending string, seen []string, again bool) {
	capture := "capture-pane -p -t " + quote(target)
	if from > 0 {
		capture += " -S " + strconv.Itoa(from)
	}
	rs, err := conn.DoAll(ctx,
		"display-message -p -t "+quote(target)+" '#{pane_dead} #{pane_in_mode} #{cursor_y} #{cursor_x} #{pane_id} #{pane_pid}'",
		capture)
	if err != nil {
		var ce *controlmode.CommandError
		switch {
		case errors.As(err, &ce):
			return verdict{kind: fallback, code: nudge.TargetNotFound, why: ce.Error()}, true, "", nil, false
		case connDown(err):
			return verdict{kind: waitConn, why: err.Error()}, true, "", nil, false
		}
		return verdict{kind: fallback, code: nudge.SendKeysError, why: err.Error()}, true, "", nil, false
	}
	var f []string
	if len(rs) == 2 && rs[0] != nil && len(rs[0].Lines) > 0 {
		f = strings.Fields(rs[0].Lines[0])
	}
	if len(f) == 6 {
		seen = []string{f[4], f[0], f[5]} // paneReplaced's fields: id, dead, pid
	}
	switch {
	case len(f) == 6 && f[0] == "1":
		return verdict{kind: fallback, code: nudge.PaneDead, why: "the pane's process has exited"}, true, "", seen, false
	case len(f) == 6 && f[1] == "1":
		return verdict{kind: hold, code: nudge.OperatorBusy, why: "pane is in copy mode"}, true, "", seen, false
	case len(f) == 6 && rs[1] != nil:
		row, err1 := strconv.Atoi(f[2])
		col, err2 := strconv.Atoi(f[3])
		if l != nil && err1 == nil && err2 == nil {
			l.cursorY.Store(int32(row))
		}
		if from <= 0 {
			return verdict{}, false, pendingEnvelope(rs[1].Lines, row, col), seen, false
		}
		rel := row - from
		if rel < 0 || rel >= len(rs[1].Lines) {
			return verdict{}, false, "", seen, true // the cursor is outside the rows captured
		}
		id := pendingEnvelope(rs[1].Lines, rel, col)
		if id == "" && envelopeAtCursor(rs[1].Lines, rel, col) {
			return verdict{}, false, "", seen, true // an envelope ends here and starts above
		}
		return verdict{}, false, id, seen, false
	}
	return verdict{}, false, "", seen, false
}

// envelopeEnd is the last thing an envelope puts on the screen. A TUI may wrap it after
// "[/", so only the rest of it is looked for at the end of the cursor's row.
const envelopeEnd = "[/BRIDGE_TRIGGER]"

// pendingEnvelope returns the id of the envelope whose end is the last text on the
// cursor's row with the cursor right after it (typed, never entered), or "". A cursor
// back at the start of the row (a raw-mode program echoing the Enter as CR) means the
// text was entered.
func pendingEnvelope(screen []string, cursorY, cursorX int) string {
	if !envelopeAtCursor(screen, cursorY, cursorX) {
		return ""
	}
	for y := cursorY; y >= 0; y-- {
		line := screen[y]
		if i := strings.LastIndex(line, "[BRIDGE_TRIGGER id="); i >= 0 {
			id := line[i+len("[BRIDGE_TRIGGER id="):]
			if k := strings.IndexByte(id, ' '); k >= 0 {
				id = id[:k]
			}
			return id
		}
	}
	return ""
}

// envelopeAtCursor reports whether an envelope's end is the last text on the cursor's
// row with the cursor right after it.
func envelopeAtCursor(screen []string, cursorY, cursorX int) bool {
	if cursorY < 0 || cursorY >= len(screen) {
		return false
	}
	row := strings.TrimRight(screen[cursorY], " ")
	// Cells, not runes, but a rune is at least one cell: a cursor left of the text's end
	// is caught, one at or past it is not.
	return strings.HasSuffix(row, envelopeEnd[2:]) && cursorX >= utf8.RuneCountInString(row)
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

func (ty *typist) typeEnvelope(ctx context.Context, conn Sender, j *job, target string, pid int) error {
	if j.envelope == "" {
		return errors.New("nothing to type: the trigger has no envelope")
	}
	buf := "nudge-" + strings.Map(func(r rune) rune {
		if r < 128 && nudge.IsIDByte(byte(r)) && r != ':' && r != '/' && r != '@' {
			return r
		}
		return '_'
	}, j.id())
	cmds, err := TypeCommands(target, pid, j.envelope, buf)
	if err != nil {
		return err
	}
	if !j.received.IsZero() {
		if ty.cfg.OnTyped != nil {
			ty.cfg.OnTyped(time.Since(j.received))
		}
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

// takeTurn counts the delivery for the rate limiter and the loop guard.
func (ls *lanes) takeTurn(j *job) {
	t := j.record()
	key := rateKey(t)
	ls.rate.take(key, ls.cfg.Now())
	if t.ThreadID != "" && t.ScheduleID == "" && t.Attempts == 0 {
		if tripped, why := ls.loops.turn(key, t.Prompt); tripped {
			ls.log.Warn("thread auto-blocked", "thread_id", t.ThreadID, "agent_id", t.Agent, "why", why)
		}
	}
}

// markInjected records that j's envelope is in the pane; newAttempt counts a typing
// (false: only the Enter of an attempt already recorded is still to come).
func (ty *typist) markInjected(j *job, d attemptDetail, newAttempt bool) {
	now := ty.cfg.Now()
	rec := j.update(now, func(t *nudge.Trigger) {
		t.State = nudge.StateInjected
		t.InjectedAt = tp(now)
		if newAttempt {
			t.Attempts++
		}
		t.DeliveryBackend = nudge.BackendTmux
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

// submit presses Enter and confirms that the prompt left the composer; one lone Enter
// repairs a swallowed one.
func (ty *typist) submit(l *lane, j *job, conn Sender, target string, rt nudge.Runtime, d attemptDetail) {
	seen, ok := ty.pressEnter(l, j, conn, target, rt, &d)
	if !ok || ty.replacedBeforeTaking(l, j, conn, target, rt, seen) {
		return
	}
	d.Composer = ""
	ty.confirmSubmitted(l, j, rt, d)
}

// pressEnter presses Enter until the prompt leaves the composer: once, a repair Enter if
// the first was swallowed, and a third after a pause for a prompt folded into a paste
// placeholder. It reports false when j went elsewhere (failed, the fallback chain, or
// the pipeline is closing). seen is the pane's identity from the look that saw the
// composer without the prompt, when that was the last look (nil: ask tmux again).
func (ty *typist) pressEnter(l *lane, j *job, conn Sender, target string, rt nudge.Runtime, d *attemptDetail) (seen []string, ok bool) {
	tries := 2
	for try := 0; try < tries; try++ {
		seq := l.outSeq.Load()
		if !ty.enter(l, j, conn, target, rt) {
			return nil, false
		}
		if ty.deps.Gates == nil {
			break
		}
		c, left, s, err := ty.awaitSubmit(l, j, conn, target, rt, seq, try == tries-1)
		if left || err != nil {
			l.clean.Store(err == nil) // seen to leave the composer
			if err == nil {
				seen = s
			}
			break
		}
		d.Composer = c
		if try == 1 && tries == 2 && !containsID(c, "id="+j.id()) {
			// Folded into a paste placeholder: the CLI may have taken an Enter that came
			// while it still read the paste as part of it. One more, after a pause.
			tries = 3
			select {
			case <-ty.ctx.Done():
				return nil, false // shutting down: the next Open resumes it
			case <-time.After(foldedPause):
			}
		}
		if try == tries-1 {
			ty.fin.finishFailed(j, nudge.SendKeysError, "prompt typed but not submitted: the composer still holds it after a repair Enter")
			return nil, false
		}
		d.Repaired = true
	}
	return seen, true
}

// enter presses Enter in the pane. No separate look at the pane comes before it: the
// Enter's own guard (IfPane: the pane id, its pid, not dead) decides in the same server
// step that presses it, and its answer says which of those failed (a round trip and a
// tmux command less per trigger, and no window between a look and the key). It reports
// false when the key did not go, j then handed on (the fallback chain, or sendFailed).
func (ty *typist) enter(l *lane, j *job, conn Sender, target string, rt nudge.Runtime) bool {
	enter, err := EnterCommand(target, rt.PID)
	if err == nil {
		_, err = conn.Do(ty.ctx, enter)
	}
	var gone *controlmode.PaneGoneError
	if errors.As(err, &gone) && ty.ctx.Err() == nil {
		v := goneVerdict(target, rt, gone)
		ty.fin.startFallback(j, v.code, v.why)
		return false
	}
	if err != nil {
		ty.sendFailed(l, j, err)
		return false
	}
	return true
}

// replacedBeforeTaking reports whether the pane's program died or was replaced before it
// took the prompt, and then hands j to the fallback chain. A program that died while the
// prompt was still being written to it (a large paste drains slowly) never took it,
// though its composer reads empty. The look that saw the composer empty asked tmux in
// the same step (seen); only when another look came after it (a TUI's composer) or none
// was made is tmux asked again.
func (ty *typist) replacedBeforeTaking(l *lane, j *job, conn Sender, target string, rt nudge.Runtime, seen []string) bool {
	v, gone := verdict{}, false
	if seen != nil {
		v, gone = replacedVerdict(target, rt, seen)
	} else {
		v, gone = paneReplaced(ty.ctx, conn, target, rt)
	}
	if gone && v.kind != waitConn {
		l.clean.Store(false)
		ty.fin.startFallback(j, v.code, v.why)
		return true
	}
	return false
}

// confirmSubmitted records that j's prompt left the composer, saying so when the agent
// holds it in its own queue or was at work when it was typed, and tells the intake gate
// to hold the next trigger until a TUI shows that it took this one.
func (ty *typist) confirmSubmitted(l *lane, j *job, rt nudge.Runtime, d attemptDetail) {
	if prof, _ := ty.deps.Runtimes.Profile(rt.Agent); ty.deps.Gates != nil && prof.Pack != "shell" {
		j.submitSeq = max(l.outSeq.Load(), 1) // what the TUI had drawn when it gave the prompt up
		if in, ok := ty.deps.Gates.(Intake); ok {
			in.Submitted(rt.RuntimeID, j.id()) // the next trigger waits until it shows it took it
		}
	}
	if ty.deps.Gates != nil && ty.queuedInAgent(rt) {
		j.update(ty.cfg.Now(), func(t *nudge.Trigger) { t.QueuedInAgent = true })
		if q, ok := ty.deps.Acks.(interface{ Queued(triggerID string) }); ok {
			q.Queued(j.id()) // only the turn that takes it acks it
		}
		ty.markSubmitted(j, d, "queued in the agent: it was busy; the turn that takes the prompt acks it")
		return
	}
	if j.typedBusy && !j.record().ForceOverride {
		// Its screen shows no queue, but the agent was at work when it was typed: say so.
		ty.markSubmitted(j, d, "typed while the agent was BUSY with a turn (its profile queues input): it waits for that turn to end")
		return
	}
	ty.markSubmitted(j, d, "")
}

// holdUnshown holds a retry (after an ack timeout) of a prompt that a TUI took out of its
// composer when the pane has drawn nothing at all since: the agent has not shown the
// prompt yet, nor a busy sign, nor an answer; it is still taking it in (Gemini CLI spends
// 10 to 30 s and more with a 63 KiB paste before it draws the prompt or a spinner, and
// sends it to its model only then). Typing it again would give it twice: the agent would
// take the second copy as its next prompt. The retry waits (deferred, AGENT_BUSY, the
// receipt saying why) until the pane draws, then goes through the gates as any retry does
// (busy: deferred; the marker or an ack meanwhile: acked); past MaxHold of silence it
// (the hold clock) falls back with ACK_TIMEOUT, never retyped.
func (ty *typist) holdUnshown(l *lane, j *job) {
	now := ty.cfg.Now()
	if j.unshownSince.IsZero() {
		j.unshownSince = now
	}
	if now.Sub(j.unshownSince) >= ty.cfg.MaxHold {
		j.submitSeq, j.unshownSince = 0, time.Time{}
		ty.fin.startFallback(j, nudge.AckTimeout, "no ack, and the agent drew nothing after it took the prompt out of its composer: not typed again")
		return
	}
	ty.markDeferred(j, verdict{kind: hold, code: nudge.AgentBusy, until: j.unshownSince.Add(ty.cfg.MaxHold),
		why: "no ack yet, but the agent took the prompt out of its composer and has drawn nothing since (still reading it): not typed again"}, now)
	j.retryAt = now.Add(ty.cfg.DeferRecheck)
	l.push(j, true)
}

// shownAtLast: the pane drew after holdUnshown held the retry; the agent is showing the
// prompt it took only now, so the wait for its ack starts again from now (a retry comes
// after a whole AckTimeout of that) instead of typing it again at once.
func (ty *typist) shownAtLast(j *job) {
	now := ty.cfg.Now()
	j.submitSeq, j.unshownSince, j.ackFrom = 0, time.Time{}, now
	rec := j.update(now, func(t *nudge.Trigger) {
		t.State = nudge.StateSubmitted
		j.settleCause(t, "the agent drew after it took the prompt: waiting for its ack again")
		t.DeferredUntil, t.NextAttemptAt = nil, nil
		t.Result = resultFor(t)
	})
	ty.persist(j, ty.audit("trigger_ack_wait", rec, rec.Message))
	ty.transition(rec.RuntimeID, nudge.StatusAwaitingAck, "trigger "+rec.TriggerID)
	ty.fin.goAwaitAck(j)
}

// foldedPause is the wait before the last Enter for a prompt still folded in the composer.
const foldedPause = time.Second

// submitPoll is how often, while the pane keeps drawing after Enter (a spinner never
// lets it go quiet), the composer is looked at again.
const submitPoll = 500 * time.Millisecond

// awaitSubmit waits for the pane to go quiet after Enter (SubmitQuiet), at most
// SubmitTimeout, and says whether j's envelope has left the composer. A TUI that animates
// while it works is never quiet: the composer is then looked at every submitPoll, so the
// submit is confirmed as soon as the envelope has gone instead of after the whole timeout.
//
// A quiet pane that still shows the envelope is taken as "not taken" early (a repair
// Enter follows) except on the last Enter (final): a loaded machine can stall the
// agent longer than SubmitQuiet before it reads the Enter (seen with Codex: a prompt
// failed as not submitted 0.8 s after it was typed), so the last one waits the whole
// SubmitTimeout before the trigger fails.
func (ty *typist) awaitSubmit(l *lane, j *job, conn Sender, target string, rt nudge.Runtime, seq uint64, final bool) (string, bool, []string, error) {
	deadline := ty.cfg.Now().Add(ty.cfg.SubmitTimeout)
	woke, stop := ty.ackedOrDone(j)
	defer stop()
	for {
		step := min(submitPoll, deadline.Sub(ty.cfg.Now()))
		quiet := l.settle(woke, ty.cfg.Now, seq, ty.cfg.SubmitQuiet, step)
		if ty.ackedYet(j) {
			// Acked while the pane settles (the agent's record shows the prompt as its
			// user message): it has left the composer; no need to wait for quiet.
			return "", true, nil, nil
		}
		c, left, seen, err := ty.leftComposer(ty.ctx, l, conn, target, j, rt)
		if left || err != nil || ty.ctx.Err() != nil || !ty.cfg.Now().Before(deadline) {
			return c, left, seen, err
		}
		if !final && quiet && l.outSeq.Load() != seq && ty.cfg.Now().Sub(time.Unix(0, l.lastOut.Load())) >= ty.cfg.SubmitQuiet {
			return c, left, seen, err // quiet after output, and still in the composer: not taken
		}
	}
}

// ackedYet reports whether j is acked already (by any signal).
func (ty *typist) ackedYet(j *job) bool {
	if ty.deps.Acks == nil {
		return false
	}
	_, ok := ty.fin.ackedNow(j)
	return ok
}

// ackedOrDone returns a channel closed when j is acked (by any signal) or the pipeline
// stops, and the function that releases it.
func (ty *typist) ackedOrDone(j *job) (<-chan struct{}, func()) {
	if ty.deps.Acks == nil {
		return ty.ctx.Done(), func() {}
	}
	ch := make(chan struct{})
	ctx, cancel := context.WithCancel(ty.ctx)
	go func() {
		defer close(ch)
		if _, err := ty.deps.Acks.Wait(ctx, j.id()); err != nil {
			<-ctx.Done() // not acked: only the end closes it
		}
	}()
	return ch, cancel
}

// paneReplaced reports, before Enter and after it, whether the pane the envelope was typed
// into has died or been respawned since (its program killed mid-paste and restarted in the
// same pane id): Enter would then submit a cut prompt, or none, to another process, and
// the receipt would claim a delivery that did not happen. The attempt falls back instead.
func paneReplaced(ctx context.Context, conn Sender, target string, rt nudge.Runtime) (verdict, bool) {
	// display-message does not fail on a missing target (tmux gives it CMD_FIND_CANFAIL):
	// it expands the formats empty. The pane id in the answer tells a gone pane apart.
	r, err := conn.Do(ctx, "display-message -p -t "+quote(target)+" '#{pane_id} #{pane_dead} #{pane_pid}'")
	if err != nil {
		var ce *controlmode.CommandError
		switch {
		case errors.As(err, &ce):
			return verdict{kind: fallback, code: nudge.TargetNotFound, why: "pane gone before Enter: " + ce.Error()}, true
		case connDown(err):
			return verdict{kind: waitConn, why: err.Error()}, true
		}
		return verdict{kind: fallback, code: nudge.SendKeysError, why: err.Error()}, true
	}
	var f []string
	if r != nil && len(r.Lines) > 0 {
		f = strings.Fields(r.Lines[0])
	}
	return replacedVerdict(target, rt, f)
}

// replacedVerdict is paneReplaced's verdict on tmux's answer f: the pane's id, whether it
// is dead, its pid (no fields: tmux found no such pane).
func replacedVerdict(target string, rt nudge.Runtime, f []string) (verdict, bool) {
	switch {
	case len(f) != 3 || strings.HasPrefix(target, "%") && f[0] != target:
		return verdict{kind: fallback, code: nudge.TargetNotFound, why: "pane " + target + " is gone (replaced or closed) before it took the prompt"}, true
	case f[1] == "1":
		return verdict{kind: fallback, code: nudge.PaneDead, why: "the pane's process exited before it took the prompt"}, true
	case rt.PID != 0 && f[2] != strconv.Itoa(rt.PID):
		return verdict{kind: fallback, code: nudge.PaneDead, why: "the pane's process was replaced (pid " +
			strconv.Itoa(rt.PID) + " -> " + f[2] + ") before it took the prompt"}, true
	}
	return verdict{}, false
}

// goneVerdict is paneReplaced's verdict for an IfPane Enter that tmux refused: what it
// found instead of the pane the envelope was typed into.
func goneVerdict(target string, rt nudge.Runtime, gone *controlmode.PaneGoneError) verdict {
	switch {
	case gone.Pane == "":
		return verdict{kind: fallback, code: nudge.TargetNotFound, why: "pane " + target + " is gone (replaced or closed) before it took the prompt"}
	case gone.Dead:
		return verdict{kind: fallback, code: nudge.PaneDead, why: "the pane's process exited before it took the prompt"}
	}
	return verdict{kind: fallback, code: nudge.PaneDead, why: "the pane's process was replaced (pid " +
		strconv.Itoa(rt.PID) + " -> " + strconv.Itoa(gone.PID) + ") before it took the prompt"}
}

// leftComposer reports whether j's envelope has left the input: first the cheap look at
// the cursor's row (no envelope of j's ends there), then, for agents whose composer is a
// TUI (any pack but the shell's), the pack's reading of the composer.
//
// seen is the pane's identity (paneCheck's) when that look was the last one, taken after
// the composer was seen without the envelope: the final check after Enter reads it
// instead of asking tmux again. For a TUI the composer is read after it, so seen is nil.
func (ty *typist) leftComposer(ctx context.Context, l *lane, conn Sender, target string, j *job, rt nudge.Runtime) (composer string, left bool, seen []string, err error) {
	v, stop, pending, seen := paneCheck(ctx, conn, target, l)
	if stop && v.kind != hold { // the connection is down, or the pane died or is gone
		return "", false, nil, errors.New(v.why)
	}
	if pending == j.id() {
		return "envelope " + j.id() + " at the cursor", false, nil, nil
	}
	if prof, _ := ty.deps.Runtimes.Profile(rt.Agent); prof.Pack == "shell" || stop {
		return "", true, seen, nil
	}
	c, err := ty.deps.Gates.Composer(ctx, rt)
	if err != nil {
		return "", false, nil, err
	}
	return c, !ty.holds(rt, c, j), nil, nil
}

// holds reports whether the composer text c is j's envelope: the text itself, or the
// placeholder(s) the agent folded it into when it took it as a large paste ("[Pasted
// Content 4096 chars][Pasted Content 1525 chars]"), whose sizes add up to it.
func (ty *typist) holds(rt nudge.Runtime, c string, j *job) bool {
	if containsID(c, "id="+j.id()) {
		return true
	}
	il, ok := ty.deps.Gates.(InputLine)
	return ok && c != "" && il.Ours(rt, c, j.envelope)
}

// queuedInAgent reports whether the agent, busy when it took the prompt, holds it in its
// own queue (the last composer look showed queued input).
func (ty *typist) queuedInAgent(rt nudge.Runtime) bool {
	il, ok := ty.deps.Gates.(InputLine)
	return ok && il.Queued(rt)
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
	if connDown(err) {
		ty.lanes.awaitConn(l, j, err)
		return
	}
	ty.fin.startFallback(j, code, err.Error())
}

func (ty *typist) markSubmitted(j *job, d attemptDetail, note string) {
	now := ty.cfg.Now()
	rt, _ := ty.deps.Runtimes.Get(j.record().RuntimeID)
	prof, _ := ty.deps.Runtimes.Profile(rt.Agent)
	rec := j.update(now, func(t *nudge.Trigger) {
		t.State = nudge.StateSubmitted
		t.SubmittedAt = tp(now)
		j.settleCause(t, note)
		t.Result = resultFor(t)
	})
	ty.persist(j, ty.auditDetail("trigger_submitted", rec, note, d))
	if ty.deps.Acks == nil || prof.SubmittedIsAck {
		ty.fin.finishAcked(j, "submitted")
		return
	}
	ty.transition(rec.RuntimeID, nudge.StatusAwaitingAck, "trigger "+rec.TriggerID)
	ty.fin.goAwaitAck(j)
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
