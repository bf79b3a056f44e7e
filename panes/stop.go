package panes

import (
	"context"
	"time"

	"github.com/nudgehq/nudge"
)

// Stop ends a runtime (seed 001 §6.9): C-c (again every 2 s), then kill-pane if the pane
// has not died within StopTimeout (a pane that exited is removed too). The runtime goes offline and is
// never restarted automatically (the stop is persisted) until Restart or a new Spawn.
func (r *Registry) Stop(ctx context.Context, id, reason string) error {
	defer r.db.Flush() // durable when it returns
	rt, err := r.beginStop(id, reason)
	if err != nil {
		return err
	}
	defer r.release(id)
	exit, forced := r.interrupt(ctx, &rt)
	r.mu.Lock()
	var chs []change
	if Live(nudge.Status(r.rts[id].Status)) {
		chs, err = r.transitionLocked(id, nudge.StatusOffline, "stopped: "+reason, "",
			func(n *nudge.Runtime) { n.ExitStatus = exit })
	}
	if err == nil {
		r.auditLocked(&rt, "runtime_stopped", reason, "", map[string]any{"killed": forced, "exit_status": exit})
	}
	r.mu.Unlock()
	r.notify(chs)
	return err
}

func (r *Registry) beginStop(id, reason string) (nudge.Runtime, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt, ok := r.rts[id]
	if !ok {
		return nudge.Runtime{}, notFound(id)
	}
	if op := r.busy[id]; op != "" && op != "restart-pending" {
		return nudge.Runtime{}, nudge.NewError(nudge.Conflict, "runtime "+id+" is busy ("+op+")")
	}
	r.busy[id] = "stopping"
	r.stopped[id] = true
	if err := r.db.PutMeta(stoppedKey(id), []byte(reason+" ")); err != nil {
		delete(r.busy, id)
		return nudge.Runtime{}, err
	}
	return cloneRuntime(rt), nil
}

// interrupt sends C-c, waits for the pane to die, then kills the pane. It returns the
// exit status seen and whether the process had to be killed.
func (r *Registry) interrupt(ctx context.Context, rt *nudge.Runtime) (*int, bool) {
	w := r.workspace(rt.WorkspaceID)
	p, alive := r.paneState(ctx, w, rt)
	if !alive && p.ID == "" {
		return nil, false
	}
	if alive {
		// C-c again every stopRepeat: a TUI agent may only quit on the second one, and one
		// sent while the program was still starting can be lost.
		cc := func() { r.logErr("stop: C-c", rt.RuntimeID, r.command(ctx, w, "send-keys", "-t", p.ID, "C-c")) }
		cc()
		p, alive = r.waitDead(ctx, w, rt, cc)
	}
	if p.ID != "" {
		r.logErr("stop: kill-pane", rt.RuntimeID, r.command(ctx, w, "kill-pane", "-t", p.ID))
	}
	return p.ExitStatus, alive
}

// paneState finds the runtime's pane: (pane, alive); pane.ID is "" if it is gone.
func (r *Registry) paneState(ctx context.Context, w *workspace, rt *nudge.Runtime) (paneInfo, bool) {
	panes, err := r.listPanes(ctx, w)
	if err != nil {
		return paneInfo{ID: rt.PaneID}, true
	}
	r.mu.Lock()
	p, found := r.findPaneLocked(rt, indexPanes(panes), panes)
	r.mu.Unlock()
	return p, found && !p.Dead
}

// stopRepeat is how often Stop sends C-c again while the program lives.
const stopRepeat = 2 * time.Second

func (r *Registry) waitDead(ctx context.Context, w *workspace, rt *nudge.Runtime, again func()) (paneInfo, bool) {
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

// command runs one tmux command over the control connection, or as a subprocess.
func (r *Registry) command(ctx context.Context, w *workspace, args ...string) error {
	if c := w.current(); c != nil {
		line, ok := quoteLine(args)
		if ok {
			if _, err := c.Do(ctx, line); err == nil {
				return nil
			}
		}
	}
	_, err := r.tmuxRun(ctx, w.hostName(), args...)
	return err
}

// Deregister stops tracking a runtime (its pane keeps running): status deregistered,
// persisted and audited with the reason. The role can then be spawned or registered again.
func (r *Registry) Deregister(ctx context.Context, id, reason string) error {
	defer r.db.Flush() // durable when it returns
	r.mu.Lock()
	if op := r.busy[id]; op != "" && op != "restart-pending" {
		r.mu.Unlock()
		return nudge.NewError(nudge.Conflict, "runtime "+id+" is busy ("+op+")")
	}
	chs, err := r.transitionLocked(id, nudge.StatusDeregistered, "deregistered: "+reason, "", nil)
	if err == nil {
		rt := r.rts[id]
		r.auditLocked(rt, "runtime_deregistered", reason, "", nil)
		r.panes.Delete(keyOf(rt))
		delete(r.rts, id)
		delete(r.busy, id)
		delete(r.stopped, id)
	}
	r.mu.Unlock()
	r.notify(chs)
	return err
}
