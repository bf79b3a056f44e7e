package inject

import (
	"context"
	"errors"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// connRetry is how soon a lane looks again for a control connection that was down.
const connRetry = 100 * time.Millisecond

// connDown reports whether err is about the control connection rather than the pane:
// the workspace has no connection (the daemon has just started, or the connection is
// being redialled), or the connection ended under the command. A *CommandError is tmux's
// answer about the pane; an unsafe or unquotable command line is nudge's own bug; a
// context error is a shutdown.
func connDown(err error) bool {
	var ce *controlmode.CommandError
	switch {
	case err == nil, errors.As(err, &ce),
		errors.Is(err, controlmode.ErrUnsafeCommand), errors.Is(err, controlmode.ErrUnquotable),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return true
}

// awaitConn puts j back at the front of its lane to be tried again once the control
// connection is up: a live agent must not be replaced by a fallback launch because the
// daemon restarted or tmux -C is being redialled. A pane that is really gone is marked
// offline by the reconciler, and the gate then falls back with PANE_DEAD; a connection
// still down after MaxDefer falls back with TARGET_NOT_FOUND. The job may have been
// typed in part (j.maybeTyped): the next attempt looks in the pane before typing.
//
// For a workspace on another host the wait is a visible hold: a trigger not yet typed
// is deferred with HOST_UNREACHABLE and the deadline, and past MaxDefer it takes the
// fallback chain with that code. One already injected keeps its state while it waits.
func (ls *lanes) awaitConn(l *lane, j *job, err error) {
	now := ls.cfg.Now()
	if j.connWait.IsZero() {
		j.connWait = now
		ls.log.Debug("control connection down: trigger waits", "trigger_id", j.id(), "err", err)
	}
	var host string
	if rt, ok := ls.deps.Runtimes.Get(l.id); ok {
		host = rt.Host
	}
	if now.Sub(j.connWait) >= ls.cfg.MaxDefer {
		j.connWait = time.Time{}
		if host != "" {
			ls.fin.startFallback(j, nudge.HostUnreachable, "host unreachable: "+host+": "+err.Error())
			return
		}
		ls.fin.startFallback(j, nudge.TargetNotFound, "no control connection: "+err.Error())
		return
	}
	if st := j.record().State; host != "" && (st == nudge.StateQueued || st == nudge.StateDeferred) {
		ls.markDeferred(j, verdict{kind: hold, code: nudge.HostUnreachable,
			why: "host unreachable: " + host + " (redialling)", until: j.connWait.Add(ls.cfg.MaxDefer)}, now)
	}
	j.decide() // answered as it stands (queued, deferred, or injected)
	j.retryAt = now.Add(connRetry)
	l.push(j, true)
}
