package inject

import (
	"context"
	"errors"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// The typist's last step: Enter, its repair, and the confirmation that the prompt left
// the composer (or why it did not), up to the receipt's submitted.

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
	enter, err := EnterCommandInto(target, rt.PID, ty.shellOK(rt))
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
