package inject

import (
	"github.com/nudgehq/nudge"
)

// A tmux that refuses send-keys for a runtime's pane (a command error that is neither a
// missing target nor a dead pane) is not cured by relaunching the agent: seed 001 §9 takes
// the runtime from triggering (or retrying) to failed on send_keys_error / resend_error.
// The trigger fails with SEND_KEYS_ERROR and no fallback chain runs; later triggers for the
// runtime fail the same way while it stays failed in the same pane, until an operator's
// restart (nudge restart) starts it again.

// refusal is the pane whose tmux refused keys, and why.
type refusal struct {
	pane string
	pid  int
	why  string
}

// keysRefused fails j after tmux refused its keys, and the runtime with it.
func (p *Pipeline) keysRefused(j *job, err error) {
	t := j.record()
	why := "tmux refused send-keys: " + err.Error()
	if rt, ok := p.deps.Runtimes.Get(t.RuntimeID); ok {
		p.fb.mu.Lock()
		p.fb.refused[rt.RuntimeID] = refusal{pane: rt.PaneID, pid: rt.PID, why: why}
		p.fb.mu.Unlock()
		p.transition(rt.RuntimeID, nudge.StatusFailed, "trigger "+t.TriggerID+": "+why)
	}
	p.finishFailed(j, nudge.SendKeysError, why+"; the runtime is failed: nudge restart "+t.RuntimeID+" once tmux takes keys again")
}

// refusedKeys reports why rt, failed, is failed because its tmux refused keys in the pane
// it still has ("" when it failed for another reason, or was relaunched since).
func (p *Pipeline) refusedKeys(rt nudge.Runtime) string {
	p.fb.mu.Lock()
	defer p.fb.mu.Unlock()
	r, ok := p.fb.refused[rt.RuntimeID]
	if !ok {
		return ""
	}
	if r.pane != rt.PaneID || r.pid != rt.PID {
		delete(p.fb.refused, rt.RuntimeID)
		return ""
	}
	return r.why
}
