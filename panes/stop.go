package panes

import (
	"context"
	"strconv"
	"time"

	"github.com/nudgehq/nudge"
)

// stop is Registry.Stop.
func (en *ender) stop(ctx context.Context, id, reason string) error {
	ctx = context.WithoutCancel(ctx)
	defer en.recs.db.Flush() // durable when it returns
	rt, err := en.recs.beginStop(id, reason)
	if err != nil {
		return err
	}
	defer en.recs.release(id)
	exit, forced, e := en.interrupt(ctx, &rt)
	if !e.OK() {
		return en.recs.stopFailed(&rt, reason, e)
	}
	return en.recs.stopDone(&rt, reason, exit, forced, e)
}

// interrupt ends the pane's program: C-c, then signals by pid (end.go), then kills the
// pane. It returns the exit status seen, whether the program had to be signalled, and
// how it ended (not OK: the pane is kept).
func (en *ender) interrupt(ctx context.Context, rt *nudge.Runtime) (*int, bool, Ended) {
	w := en.conns.workspace(rt.WorkspaceID)
	if at := w.place(); !at.owned(rt.WorkspaceID) && !rt.Managed {
		// The user's own session (place.go): an adopted pane nudge only tracks is left
		// to its user.
		return nil, false, Ended{How: "left running: its pane is in the user's " + at.String() + ", which nudge does not own"}
	}
	p, alive, err := en.paneLookup(ctx, w, rt)
	if err != nil && w.hostName() == "" && rt.PID > 0 {
		// tmux does not answer: end the recorded pid if it proves to be the pane's.
		t := en.procTree(w, paneInfo{ID: rt.PaneID, PID: rt.PID}, false, 0)
		if _, exists := readStat(rt.PID); exists && t.root == 0 {
			// Something runs as that pid but it cannot be shown to be the pane's: neither
			// signalled nor claimed stopped.
			return nil, false, Ended{Left: []int{rt.PID}, How: "could not be ended: tmux did not answer (" + err.Error() +
				") and pid " + strconv.Itoa(rt.PID) + " does not prove to be the pane's process"}
		}
		e := en.end(t, en.signalSteps(t))
		e.How = "tmux did not answer (" + err.Error() + "); " + e.How
		if e.OK() {
			en.killPaneID(ctx, w, rt, rt.PaneID)
		}
		return nil, len(e.PIDs) > 0, e
	}
	if !alive && p.ID == "" {
		if e := en.endLeftovers(ctx, w, rt); len(e.PIDs) > 0 {
			return nil, e.By != "exited", e
		}
		return nil, false, Ended{How: "no pane"}
	}
	// C-c again every stopRepeat: a TUI agent may only quit on the second one, and one
	// sent while the program was still starting can be lost.
	cc := func() {
		en.recs.logErr("stop: C-c", rt.RuntimeID, en.conns.command(ctx, w, "send-keys", "-t", p.ID, "C-c"))
	}
	if w.hostName() != "" || p.PID <= 0 {
		return en.interruptRemote(ctx, w, rt, p, alive, cc)
	}
	t := en.paneProcs(ctx, w, p, alive)
	steps := en.signalSteps(t)
	if alive {
		steps = append([]endStep{{name: "C-c", act: cc, wait: en.cfg.StopTimeout, repeat: stopRepeat}}, steps...)
	}
	e := en.end(t, steps)
	if !e.OK() {
		return nil, true, e
	}
	if alive {
		p = en.deadPane(ctx, w, rt)
	}
	if p.ID != "" {
		en.conns.keepScreen(ctx, rt, p.ID) // how it ended, for nudge tail
		en.killPaneID(ctx, w, rt, p.ID)
	}
	return p.ExitStatus, e.By != "C-c" && e.By != "exited", e
}

// interruptRemote is the stop of a pane whose processes are not this machine's (or whose
// pid is unknown): C-c until StopTimeout, then on a remote host the signals by pid there
// (endremote.go), then kill-pane (alone, where that could not run: its SIGHUP a program
// may ignore).
func (en *ender) interruptRemote(ctx context.Context, w *workspace, rt *nudge.Runtime, p paneInfo, alive bool, cc func()) (*int, bool, Ended) {
	e := Ended{By: "exited", How: "ended before any signal"}
	if alive {
		cc()
		p, alive = en.waitDead(ctx, w, rt, cc)
		e = Ended{By: "C-c", How: "ended by C-c"}
	}
	if alive && p.PID > 0 && w.hostName() != "" {
		if re, ok := en.endRemote(ctx, w.hostName(), p.PID); ok {
			if !re.OK() {
				return nil, true, re
			}
			p = en.deadPane(ctx, w, rt)
			return p.ExitStatus, true, en.killPane(ctx, w, rt, p, re)
		}
	}
	if alive {
		e = Ended{By: "kill-pane", How: "kill-pane (SIGHUP) after C-c for " + en.cfg.StopTimeout.String() + "; not checked by pid"}
	}
	return p.ExitStatus, alive, en.killPane(ctx, w, rt, p, e)
}

// killPane kills p if it still exists and passes e through.
func (en *ender) killPane(ctx context.Context, w *workspace, rt *nudge.Runtime, p paneInfo, e Ended) Ended {
	if p.ID != "" {
		en.killPaneID(ctx, w, rt, p.ID)
	}
	return e
}

// killPaneID kills a pane nudge ended the program of: in its own session only. In a
// user's session (place.go) the pane stays (with remain-on-exit, dead with its last
// screen): a session's last pane killed would end the user's session.
func (en *ender) killPaneID(ctx context.Context, w *workspace, rt *nudge.Runtime, id string) {
	if !w.place().owned(rt.WorkspaceID) {
		return
	}
	en.recs.logErr("stop: kill-pane", rt.RuntimeID, en.conns.command(ctx, w, "kill-pane", "-t", id))
}

// deadPane waits (up to statusGrace) for tmux to see the pane's program gone, for its
// exit status: the pane then reads dead, or is gone.
func (en *ender) deadPane(ctx context.Context, w *workspace, rt *nudge.Runtime) paneInfo {
	deadline := time.Now().Add(statusGrace)
	for {
		p, alive := en.paneState(ctx, w, rt)
		if !alive && (p.ID == "" || p.ExitStatus != nil) || time.Now().After(deadline) || ctx.Err() != nil {
			return p
		}
		if !alive {
			en.conns.reap(ctx, w) // dead without its status (reap.go)
		}
		time.Sleep(statusRecheck)
	}
}

// paneState finds the runtime's pane: (pane, alive); pane.ID is "" if it is gone. When
// tmux cannot list the panes it reports the recorded pane as alive.
func (en *ender) paneState(ctx context.Context, w *workspace, rt *nudge.Runtime) (paneInfo, bool) {
	p, alive, _ := en.paneLookup(ctx, w, rt)
	return p, alive
}

// paneLookup is paneState with the listing's error.
func (en *ender) paneLookup(ctx context.Context, w *workspace, rt *nudge.Runtime) (paneInfo, bool, error) {
	panes, err := en.conns.listPanes(ctx, w)
	if err != nil {
		return paneInfo{ID: rt.PaneID}, true, err
	}
	p, found := en.recs.findPane(rt, panes)
	return p, found && !p.Dead, nil
}

// stopRepeat is how often Stop sends C-c again while the program lives.
const stopRepeat = 2 * time.Second

func (en *ender) waitDead(ctx context.Context, w *workspace, rt *nudge.Runtime, again func()) (paneInfo, bool) {
	deadline := time.NewTimer(en.cfg.StopTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	repeat := time.NewTicker(stopRepeat)
	defer repeat.Stop()
	for {
		p, alive := en.paneState(ctx, w, rt)
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
