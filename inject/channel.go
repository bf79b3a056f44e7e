package inject

import (
	"context"
	"errors"
	"runtime/trace"
	"time"

	"github.com/nudgehq/nudge"
)

// Channel hands a trigger's envelope to the agent through the agent's own channel (an
// app-server it runs) instead of its keyboard: nothing is typed, a human's draft is not
// touched, and a busy agent queues the prompt itself. Deps.Channel; nil: every trigger
// is typed.
type Channel interface {
	// Deliver gives text to rt's agent and returns the channel's name (the receipt's
	// delivery_backend). An error wrapping ErrNoChannel means nothing was sent (no
	// channel for rt now, or the agent refused it): the trigger is typed instead. Any
	// other error may have left the prompt with the agent.
	Deliver(ctx context.Context, rt nudge.Runtime, text string) (backend string, err error)
	// Withdraw takes the prompt holding mark out of the agent's queue if it still waits
	// there (the agent has not taken it into a turn) and reports whether it did: then the
	// prompt never reached the agent and may go again. false with a nil error: none
	// waits there, the agent has it (or never had: its record says).
	Withdraw(ctx context.Context, rt nudge.Runtime, mark string) (bool, error)
}

// ErrNoChannel: the agent's channel did not take the prompt and nothing was sent.
var ErrNoChannel = errors.New("no channel")

// viaChannel delivers j through the agent's own channel, if it has one, and reports
// whether it did: then j is submitted and its ack awaited as for a typed prompt; an
// error that may have left the prompt with the agent counts as submitted too (the
// agent's record says, and a retry looks there before anything goes again).
func (ty *typist) viaChannel(l *lane, j *job, rt nudge.Runtime, d attemptDetail) bool {
	if ty.deps.Channel == nil || j.envelope == "" || j.keysOnly {
		return false
	}
	reg := trace.StartRegion(j.traceCtx(), "deliver.channel")
	ty.handed(j, rt)
	backend, err := ty.deps.Channel.Deliver(ty.ctx, rt, j.envelope)
	reg.End()
	if errors.Is(err, ErrNoChannel) {
		return false
	}
	ty.lanes.takeTurn(j)
	j.endTask()
	j.submitSeq, j.unshownSince, j.ackFrom = 0, time.Time{}, time.Time{}
	d.Typed, d.EchoSeen = false, false
	ty.markInjectedVia(j, d, true, backend)
	l.clean.Store(true) // nothing was typed into the composer
	note := "handed to the agent through " + backend
	if err != nil {
		note = "sent through " + backend + ", its answer lost (" + err.Error() + "): the agent's record decides"
	}
	ty.markSubmitted(j, d, note)
	return true
}

// channelMark is the text that finds trigger id's envelope in an agent's queue.
func channelMark(id string) string { return "[BRIDGE_TRIGGER id=" + id + " " }

// withdraw, at the ack timeout of j handed over by a channel, takes its prompt out of
// the agent's queue if it still waits there (Codex does not run its queue after a turn
// the user interrupted): it never reached the agent, and the retry types it. A prompt
// the agent took is left to the retry as a typed one would be: the agent's record
// acked it, or kept the wait going while the agent worked, if it could.
func (f *finisher) withdraw(j *job) {
	t := j.record()
	if f.deps.Channel == nil || t.DeliveryBackend == "" || t.DeliveryBackend == nudge.BackendTmux {
		return
	}
	j.keysOnly = true
	rt, ok := f.deps.Runtimes.Get(t.RuntimeID)
	if !ok {
		return
	}
	if took, _ := f.deps.Channel.Withdraw(f.ctx, rt, channelMark(t.TriggerID)); took {
		f.persist(j, f.auditDetail("trigger_withdrawn", t, "still waiting in the agent's queue after the ack timeout: taken out, typed instead",
			map[string]any{"backend": t.DeliveryBackend}))
	}
}
