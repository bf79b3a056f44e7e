package inject

import (
	"context"
	"errors"

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

// channelMark is the text that finds trigger id's envelope in an agent's queue.
func channelMark(id string) string { return "[BRIDGE_TRIGGER id=" + id + " " }

// withdraw, at the ack timeout of j handed over by a channel, takes its prompt out of
// the agent's queue if it still waits there (Codex does not run its queue after a turn
// the user interrupted): it never reached the agent, and the retry types it. A prompt
// the agent took is left to the retry as a typed one would be: the agent's record
// acked it, or kept the wait going while the agent worked, if it could. It asks the
// channel on the caller's goroutine (the ack wait's); j's lane applies what it found
// (withdrawal.apply).
func (p *Pipeline) withdraw(j *job) withdrawal {
	t := j.record()
	if p.deps.Channel == nil || t.DeliveryBackend == "" || t.DeliveryBackend == nudge.BackendTmux {
		return withdrawal{}
	}
	w := withdrawal{keysOnly: true}
	if rt, ok := p.deps.Runtimes.Get(t.RuntimeID); ok {
		w.took, _ = p.deps.Channel.Withdraw(p.ctx, rt, channelMark(t.TriggerID))
	}
	return w
}

// withdrawal is what withdraw did: the trigger goes by keys from now on (keysOnly), and
// its prompt was taken out of the agent's queue (took).
type withdrawal struct{ keysOnly, took bool }

// apply records the withdrawal on j.
func (w withdrawal) apply(p *Pipeline, j *job) {
	if w.keysOnly {
		j.keysOnly = true
	}
	if w.took {
		t := j.record()
		p.persist(j, p.auditDetail("trigger_withdrawn", t, "still waiting in the agent's queue after the ack timeout: taken out, typed instead",
			map[string]any{"backend": t.DeliveryBackend}))
	}
}
