package inject

import (
	"context"
	"errors"
	"time"

	"github.com/nudgehq/nudge/controlmode"
)

// An attempt's last stage: the echo wait, Enter, its repair, and the confirmation that
// the prompt left the composer (or why it did not), up to oSubmitted.

// submit waits for the typing's echo, presses Enter and confirms that the prompt left
// the composer; one lone Enter repairs a swallowed one.
func (a attempt) submit(ctx context.Context, s Sender) outcome {
	d := a.detail
	if a.inComposer {
		d.EchoSeen = true // on screen already: nothing new will echo
	} else {
		d.EchoSeen = a.pane.settle(ctx.Done(), a.env.now, a.seq, a.prof.SubmitSettle, a.env.echoTimeout)
	}
	seen, o, ok := a.pressEnter(ctx, s, &d)
	if !ok {
		return o
	}
	if o, gone := a.replacedBeforeTaking(ctx, s, seen); gone {
		return o
	}
	d.Composer = ""
	return a.confirmSubmitted(d)
}

// pressEnter presses Enter until the prompt leaves the composer: once, a repair Enter if
// the first was swallowed, and a third after a pause for a prompt folded into a paste
// placeholder. It reports false, with the outcome, when the attempt ends otherwise. seen
// is the pane's identity from the look that saw the composer without the prompt, when
// that was the last look (nil: ask tmux again).
func (a *attempt) pressEnter(ctx context.Context, s Sender, d *attemptDetail) (seen []string, o outcome, ok bool) {
	tries := 2
	for try := 0; try < tries; try++ {
		seq := a.pane.outSeq.Load()
		if o, ok := a.enter(ctx, s); !ok {
			return nil, o, false
		}
		if a.env.gates == nil {
			break
		}
		c, left, sn, err := a.awaitSubmit(ctx, s, seq, try == tries-1)
		if left || err != nil {
			a.pane.clean.Store(err == nil) // seen to leave the composer
			if err == nil {
				seen = sn
			}
			break
		}
		d.Composer = c
		if try == 1 && tries == 2 && !containsID(c, "id="+a.id()) {
			// Folded into a paste placeholder: the CLI may have taken an Enter that came
			// while it still read the paste as part of it. One more, after a pause.
			tries = 3
			select {
			case <-ctx.Done():
				return nil, outcome{kind: oStopped}, false // shutting down: the next Open resumes it
			case <-time.After(foldedPause):
			}
		}
		if try == tries-1 {
			return nil, outcome{kind: oNotSubmitted, detail: *d}, false
		}
		d.Repaired = true
	}
	return seen, outcome{}, true
}

// enter presses Enter in the pane. No separate look at the pane comes before it: the
// Enter's own guard (IfPane: the pane id, its pid, not dead) decides in the same server
// step that presses it, and its answer says which of those failed (a round trip and a
// tmux command less per trigger, and no window between a look and the key). It reports
// false, with the outcome, when the key did not go.
func (a *attempt) enter(ctx context.Context, s Sender) (outcome, bool) {
	enter, err := EnterCommandInto(a.target, a.rt.PID, a.shellOK())
	if err == nil {
		_, err = s.Do(ctx, enter)
	}
	var gone *controlmode.PaneGoneError
	if errors.As(err, &gone) && ctx.Err() == nil {
		return outcome{kind: oFallback, v: goneVerdict(a.target, a.rt, gone)}, false
	}
	if err != nil {
		return outcome{kind: oSendFailed, err: err}, false
	}
	return outcome{}, true
}

// replacedBeforeTaking reports whether the pane's program died or was replaced before it
// took the prompt (oFallback). A program that died while the prompt was still being
// written to it (a large paste drains slowly) never took it, though its composer reads
// empty. The look that saw the composer empty asked tmux in the same step (seen); only
// when another look came after it (a TUI's composer) or none was made is tmux asked
// again.
func (a *attempt) replacedBeforeTaking(ctx context.Context, s Sender, seen []string) (outcome, bool) {
	v, gone := verdict{}, false
	if seen != nil {
		v, gone = replacedVerdict(a.target, a.rt, seen)
	} else {
		v, gone = paneReplaced(ctx, s, a.target, a.rt)
	}
	if gone && v.kind != waitConn {
		a.pane.clean.Store(false)
		return outcome{kind: oFallback, v: v}, true
	}
	return outcome{}, false
}

// confirmSubmitted is the outcome of a prompt that left the composer: it says so when the
// agent holds it in its own queue or was at work when it was typed, and tells the intake
// gate to hold the next trigger until a TUI shows that it took this one.
func (a *attempt) confirmSubmitted(d attemptDetail) outcome {
	o := outcome{kind: oSubmitted, detail: d}
	gates := a.env.gates
	if gates != nil && a.prof.Pack != "shell" {
		o.submitSeq = max(a.pane.outSeq.Load(), 1) // what the TUI had drawn when it gave the prompt up
		if in, ok := gates.(Intake); ok {
			in.Submitted(a.rt.RuntimeID, a.id()) // the next trigger waits until it shows it took it
		}
	}
	if il, ok := gates.(InputLine); ok && il.Queued(a.rt) {
		o.queued = true
		if q, ok := a.env.acks.(interface{ Queued(triggerID string) }); ok {
			q.Queued(a.id()) // only the turn that takes it acks it
		}
		o.note = "queued in the agent: it was busy; the turn that takes the prompt acks it"
		return o
	}
	if a.typedBusy && !a.t.ForceOverride {
		// Its screen shows no queue, but the agent was at work when it was typed: say so.
		o.note = "typed while the agent was BUSY with a turn (its profile queues input): it waits for that turn to end"
	}
	return o
}

// foldedPause is the wait before the last Enter for a prompt still folded in the composer.
const foldedPause = time.Second

// submitPoll is how often, while the pane keeps drawing after Enter (a spinner never
// lets it go quiet), the composer is looked at again.
const submitPoll = 500 * time.Millisecond

// awaitSubmit waits for the pane to go quiet after Enter (SubmitQuiet), at most
// SubmitTimeout, and says whether the envelope has left the composer. A TUI that
// animates while it works is never quiet: the composer is then looked at every
// submitPoll, so the submit is confirmed as soon as the envelope has gone instead of
// after the whole timeout.
//
// A quiet pane that still shows the envelope is taken as "not taken" early (a repair
// Enter follows) except on the last Enter (final): a loaded machine can stall the
// agent longer than SubmitQuiet before it reads the Enter (seen with Codex: a prompt
// failed as not submitted 0.8 s after it was typed), so the last one waits the whole
// SubmitTimeout before the trigger fails.
func (a *attempt) awaitSubmit(ctx context.Context, s Sender, seq uint64, final bool) (string, bool, []string, error) {
	now := a.env.now
	deadline := now().Add(a.env.submitTimeout)
	woke, stop := ackedOrDone(ctx, a.env.acks, a.id())
	defer stop()
	for {
		step := min(submitPoll, deadline.Sub(now()))
		quiet := a.pane.settle(woke, now, seq, a.env.submitQuiet, step)
		if a.env.acks != nil {
			if _, acked := ackedNow(ctx, a.env.acks, a.id()); acked {
				// Acked while the pane settles (the agent's record shows the prompt as
				// its user message): it has left the composer; no need to wait for quiet.
				return "", true, nil, nil
			}
		}
		c, left, seen, err := a.leftComposer(ctx, s)
		if left || err != nil || ctx.Err() != nil || !now().Before(deadline) {
			return c, left, seen, err
		}
		if !final && quiet && a.pane.outSeq.Load() != seq && now().Sub(time.Unix(0, a.pane.lastOut.Load())) >= a.env.submitQuiet {
			return c, left, seen, err // quiet after output, and still in the composer: not taken
		}
	}
}

// leftComposer reports whether the envelope has left the input: first the cheap look at
// the cursor's row (no envelope of this trigger's ends there), then, for agents whose
// composer is a TUI (any pack but the shell's), the pack's reading of the composer.
//
// seen is the pane's identity (paneCheck's) when that look was the last one, taken after
// the composer was seen without the envelope: the final check after Enter reads it
// instead of asking tmux again. For a TUI the composer is read after it, so seen is nil.
func (a *attempt) leftComposer(ctx context.Context, s Sender) (composer string, left bool, seen []string, err error) {
	v, stop, pending, seen := paneCheck(ctx, s, a.target, a.pane)
	if stop && v.kind != hold { // the connection is down, or the pane died or is gone
		return "", false, nil, errors.New(v.why)
	}
	if pending == a.id() {
		return "envelope " + a.id() + " at the cursor", false, nil, nil
	}
	if a.prof.Pack == "shell" || stop {
		return "", true, seen, nil
	}
	c, err := a.env.gates.Composer(ctx, a.rt)
	if err != nil {
		return "", false, nil, err
	}
	return c, !a.holds(c), nil, nil
}

// ackedOrDone returns a channel closed when trigger id is acked (by any signal) or ctx
// ends, and the function that releases it.
func ackedOrDone(ctx context.Context, acks Acker, id string) (<-chan struct{}, func()) {
	if acks == nil {
		return ctx.Done(), func() {}
	}
	ch := make(chan struct{})
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		defer close(ch)
		if _, err := acks.Wait(ctx, id); err != nil {
			<-ctx.Done() // not acked: only the end closes it
		}
	}()
	return ch, cancel
}

// ackedNow reports whether acks acked trigger id already (without waiting), and how.
func ackedNow(ctx context.Context, acks Acker, id string) (string, bool) {
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	sig, err := acks.Wait(ctx, id)
	return sig, err == nil
}
