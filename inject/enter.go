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
		if a.env.gates != nil && a.prof.Pack != "shell" && NeedsPaste(a.envelope) {
			d.EchoSeen = a.awaitShown(ctx)
		}
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
//
// A repair Enter never goes to an agent that may have taken the prompt: each Enter waits
// the whole SubmitTimeout for it to leave the composer (awaitSubmit), and the agent's
// record is read to its end before the next one. An agent can take a prompt at Enter and
// redraw its composer only seconds later (Gemini CLI after a 63 KiB paste, on a loaded
// machine): a second Enter read before that redraw gives it the prompt again.
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
		c, left, sn, err := a.awaitSubmit(ctx, s, seq, d.EchoSeen)
		if !left && err == nil && ctx.Err() == nil && try < tries-1 && a.inRecord(ctx) {
			left = true // the agent has it: its composer has not been redrawn yet
		}
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

// inRecord reports whether the agent's record, read to its end, shows the prompt (the
// trigger is acked): before a repair Enter, a prompt the agent took is not entered again.
func (a *attempt) inRecord(ctx context.Context) bool {
	if a.env.acks == nil {
		return false
	}
	_, ok := inRecord(ctx, a.env.acks, a.rt.RuntimeID, a.id())
	return ok
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

// awaitShown waits, at most SubmitTimeout, until the TUI's composer shows a pasted
// prompt, and reports whether it did. Output after the paste is not its echo yet: an
// agent may draw something else first and the paste only seconds later (Gemini CLI, a
// 63 KiB paste on a loaded machine), and an Enter pressed before it shows the prompt is
// read before the paste or with it, and lost; the empty composer after it would read as
// the prompt having left.
func (a *attempt) awaitShown(ctx context.Context) bool {
	now := a.env.now
	deadline := now().Add(a.env.submitTimeout)
	for {
		seq := a.pane.outSeq.Load()
		if c, err := a.env.gates.Composer(ctx, a.rt); err == nil && a.holds(c) {
			return true
		}
		if ctx.Err() != nil || !now().Before(deadline) {
			return false
		}
		a.pane.settle(ctx.Done(), now, seq, a.prof.SubmitSettle, min(submitPoll, deadline.Sub(now())))
	}
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
// A pane gone quiet that still shows the envelope is not taken as "not taken" before the
// whole SubmitTimeout has passed: quiet after output says nothing of whether the agent
// has read the Enter. The output may be the end of the typing's echo, and an agent may
// take the prompt and then work for seconds before it redraws its composer (Gemini CLI,
// given a 63 KiB paste on a loaded machine, took the repair Enter that followed 250 ms of
// quiet as a second copy of the prompt; Codex, stalled by the load, had a prompt fail as
// not submitted 0.8 s after it was typed).
//
// Nor does a composer without the envelope count as left while the agent has drawn
// nothing since Enter, when the typing's echo was not seen before it (echoed false): it
// may not have drawn the typing yet (Gemini CLI reads a large paste for seconds before
// it shows it), and the envelope leaves only when it reads the Enter after it. At the
// timeout it counts as left.
func (a *attempt) awaitSubmit(ctx context.Context, s Sender, seq uint64, echoed bool) (string, bool, []string, error) {
	now := a.env.now
	deadline := now().Add(a.env.submitTimeout)
	woke, stop := ackedOrDone(ctx, a.env.acks, a.id())
	defer stop()
	for {
		step := min(submitPoll, deadline.Sub(now()))
		a.pane.settle(woke, now, seq, a.env.submitQuiet, step)
		if a.env.acks != nil {
			if _, acked := ackedNow(ctx, a.env.acks, a.id()); acked {
				// Acked while the pane settles (the agent's record shows the prompt as
				// its user message): it has left the composer; no need to wait for quiet.
				return "", true, nil, nil
			}
		}
		c, left, seen, err := a.leftComposer(ctx, s)
		late := !now().Before(deadline)
		if left && !echoed && !late && err == nil && ctx.Err() == nil && a.pane.outSeq.Load() == seq && a.prof.Pack != "shell" {
			continue // not drawn yet, maybe: the agent has shown nothing since Enter
		}
		if left || err != nil || ctx.Err() != nil || late {
			return c, left, seen, err
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
