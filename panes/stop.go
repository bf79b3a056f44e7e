package panes

import (
	"context"
	"strconv"
	"time"

	"github.com/nudgehq/nudge"
)

// stop is Registry.Stop.
func (r *ender) stop(ctx context.Context, id, reason string) error {
	ctx = context.WithoutCancel(ctx)
	defer r.recs.db.Flush() // durable when it returns
	rt, err := r.recs.beginStop(id, reason)
	if err != nil {
		return err
	}
	defer r.recs.release(id)
	exit, forced, e := r.interrupt(ctx, &rt)
	if !e.OK() {
		return r.recs.stopFailed(&rt, reason, e)
	}
	return r.recs.stopDone(&rt, reason, exit, forced, e)
}

// interrupt ends the pane's program: C-c, then signals by pid (end.go), then kills the
// pane. It returns the exit status seen, whether the program had to be signalled, and
// how it ended (not OK: the pane is kept).
func (r *ender) interrupt(ctx context.Context, rt *nudge.Runtime) (*int, bool, Ended) {
	w := r.conns.workspace(rt.WorkspaceID)
	p, alive, err := r.paneLookup(ctx, w, rt)
	if err != nil && w.hostName() == "" && rt.PID > 0 {
		// tmux does not answer: end the recorded pid if it proves to be the pane's.
		t := r.procTree(paneInfo{ID: rt.PaneID, PID: rt.PID}, false, 0)
		if _, exists := readStat(rt.PID); exists && t.root == 0 {
			// Something runs as that pid but it cannot be shown to be the pane's: neither
			// signalled nor claimed stopped.
			return nil, false, Ended{Left: []int{rt.PID}, How: "could not be ended: tmux did not answer (" + err.Error() +
				") and pid " + strconv.Itoa(rt.PID) + " does not prove to be the pane's process"}
		}
		e := r.end(t, r.signalSteps(t))
		e.How = "tmux did not answer (" + err.Error() + "); " + e.How
		if e.OK() {
			r.recs.logErr("stop: kill-pane", rt.RuntimeID, r.conns.command(ctx, w, "kill-pane", "-t", rt.PaneID))
		}
		return nil, len(e.PIDs) > 0, e
	}
	if !alive && p.ID == "" {
		if e := r.endLeftovers(ctx, w, rt); len(e.PIDs) > 0 {
			return nil, e.By != "exited", e
		}
		return nil, false, Ended{How: "no pane"}
	}
	// C-c again every stopRepeat: a TUI agent may only quit on the second one, and one
	// sent while the program was still starting can be lost.
	cc := func() {
		r.recs.logErr("stop: C-c", rt.RuntimeID, r.conns.command(ctx, w, "send-keys", "-t", p.ID, "C-c"))
	}
	if w.hostName() != "" || p.PID <= 0 {
		return r.interruptRemote(ctx, w, rt, p, alive, cc)
	}
	t := r.paneProcs(ctx, w, p, alive)
	steps := r.signalSteps(t)
	if alive {
		steps = append([]endStep{{name: "C-c", act: cc, wait: r.cfg.StopTimeout, repeat: stopRepeat}}, steps...)
	}
	e := r.end(t, steps)
	if !e.OK() {
		return nil, true, e
	}
	if alive {
		p = r.deadPane(ctx, w, rt)
	}
	if p.ID != "" {
		r.conns.keepScreen(ctx, rt, p.ID) // how it ended, for nudge tail
		r.recs.logErr("stop: kill-pane", rt.RuntimeID, r.conns.command(ctx, w, "kill-pane", "-t", p.ID))
	}
	return p.ExitStatus, e.By != "C-c" && e.By != "exited", e
}

// interruptRemote is the stop of a pane whose processes are not this machine's (or whose
// pid is unknown): C-c until StopTimeout, then on a remote host the signals by pid there
// (endremote.go), then kill-pane (alone, where that could not run: its SIGHUP a program
// may ignore).
func (r *ender) interruptRemote(ctx context.Context, w *workspace, rt *nudge.Runtime, p paneInfo, alive bool, cc func()) (*int, bool, Ended) {
	e := Ended{By: "exited", How: "ended before any signal"}
	if alive {
		cc()
		p, alive = r.waitDead(ctx, w, rt, cc)
		e = Ended{By: "C-c", How: "ended by C-c"}
	}
	if alive && p.PID > 0 && w.hostName() != "" {
		if re, ok := r.endRemote(ctx, w.hostName(), p.PID); ok {
			if !re.OK() {
				return nil, true, re
			}
			p = r.deadPane(ctx, w, rt)
			return p.ExitStatus, true, r.killPane(ctx, w, rt, p, re)
		}
	}
	if alive {
		e = Ended{By: "kill-pane", How: "kill-pane (SIGHUP) after C-c for " + r.cfg.StopTimeout.String() + "; not checked by pid"}
	}
	return p.ExitStatus, alive, r.killPane(ctx, w, rt, p, e)
}

// killPane kills p if it still exists and passes e through.
func (r *ender) killPane(ctx context.Context, w *workspace, rt *nudge.Runtime, p paneInfo, e Ended) Ended {
	if p.ID != "" {
		r.recs.logErr("stop: kill-pane", rt.RuntimeID, r.conns.command(ctx, w, "kill-pane", "-t", p.ID))
	}
	return e
}

// deadPane waits (up to statusGrace) for tmux to see the pane's program gone, for its
// exit status: the pane then reads dead, or is gone.
func (r *ender) deadPane(ctx context.Context, w *workspace, rt *nudge.Runtime) paneInfo {
	deadline := time.Now().Add(statusGrace)
	for {
		p, alive := r.paneState(ctx, w, rt)
		if !alive && (p.ID == "" || p.ExitStatus != nil) || time.Now().After(deadline) || ctx.Err() != nil {
			return p
		}
		if !alive {
			r.conns.reap(ctx, w) // dead without its status (reap.go)
		}
		time.Sleep(statusRecheck)
	}
}

// paneState finds the runtime's pane: (pane, alive); pane.ID is "" if it is gone. When
// tmux cannot list the panes it reports the recorded pane as alive.
func (r *ender) paneState(ctx context.Context, w *workspace, rt *nudge.Runtime) (paneInfo, bool) {
	p, alive, _ := r.paneLookup(ctx, w, rt)
	return p, alive
}

// paneLookup is paneState with the listing's error.
func (r *ender) paneLookup(ctx context.Context, w *workspace, rt *nudge.Runtime) (paneInfo, bool, error) {
	panes, err := r.conns.listPanes(ctx, w)
	if err != nil {
		return paneInfo{ID: rt.PaneID}, true, err
	}
	p, found := r.recs.findPane(rt, panes)
	return p, found && !p.Dead, nil
}

// stopRepeat is how often Stop sends C-c again while the program lives.
const stopRepeat = 2 * time.Second

func (r *ender) waitDead(ctx context.Context, w *workspace, rt *nudge.Runtime, again func()) (paneInfo, bool) {
	deadline := time.NewTimer(r.cfg.StopTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	repeat := time.NewTicker(stopRepeat)
	defer repeat.Stop()
	for {
		p, alive := r.paneState(ctx, w, rt)
		if !alive {
			return p, false
		}
		select {
		case <-ctx.Done():
			return p, true
		case <-deadline.C:
			return p, true
		case <-repeat.C:
			again()
		case <-tick.C:
		}
	}
}
