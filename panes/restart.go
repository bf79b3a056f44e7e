package panes

import (
	"context"
	"fmt"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// Restart respawns the runtime's argv: in its own pane if the pane still exists
// (respawn-pane -k keeps the pane id and window), else in a new window (and session).
// It clears a Stop. The runtime goes to starting; a failure leaves it failed with
// SPAWN_FAILED.
func (r *Registry) Restart(ctx context.Context, id, reason string) (store.Runtime, error) {
	return r.restart(ctx, id, reason, false)
}

// restart does the work; auto restarts run only if the runtime is still pending one.
func (r *Registry) restart(ctx context.Context, id, reason string, auto bool) (store.Runtime, error) {
	return r.relaunchAs(ctx, id, reason, auto, nil)
}

// restartWith runs once (not the runtime's own argv) in the runtime's pane.
func (r *Registry) restartWith(ctx context.Context, id, reason string, once []string) (store.Runtime, error) {
	return r.relaunchAs(ctx, id, reason, false, once)
}

func (r *Registry) relaunchAs(ctx context.Context, id, reason string, auto bool, once []string) (store.Runtime, error) {
	rt, err := r.beginRestart(id, auto)
	if err != nil || rt == nil {
		return store.Runtime{}, err
	}
	defer r.release(id)
	r.stats.Restarts.Add(1)
	launch := rt
	if once != nil {
		c := *rt
		c.Argv = once
		launch = &c
	}
	p, err := r.relaunch(ctx, launch)
	r.mu.Lock()
	var chs []change
	if err != nil {
		chs, _ = r.toStatusLocked(id, nudge.StatusFailed, "restart failed: "+err.Error(), nudge.SpawnFailed, nil)
	} else {
		chs, err = r.toStatusLocked(id, nudge.StatusStarting, reason, "", func(n *store.Runtime) {
			setPane(n, p)
			n.ExitStatus = nil
			n.Restarts++
		})
	}
	r.mu.Unlock()
	r.notify(chs)
	r.wake(rt.WorkspaceID)
	if err != nil {
		return store.Runtime{}, err
	}
	got, _ := r.Get(id)
	return got, nil
}

// beginRestart marks the runtime restarting. For an auto restart it returns nil, nil
// when the restart is no longer wanted (stopped, deregistered, already recovered).
func (r *Registry) beginRestart(id string, auto bool) (*store.Runtime, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt, ok := r.rts[id]
	if auto {
		if r.busy[id] != "restart-pending" {
			return nil, nil
		}
		if !ok || !r.restartableLocked(rt) {
			delete(r.busy, id)
			return nil, nil
		}
	} else {
		if !ok {
			return nil, notFound(id)
		}
		if op := r.busy[id]; op != "" && op != "restart-pending" {
			return nil, nudge.NewError(nudge.Conflict, fmt.Sprintf("runtime %s is busy (%s)", id, op))
		}
		delete(r.stopped, id)
		r.clearStoppedLocked(id)
	}
	r.busy[id] = "restarting"
	c := cloneRuntime(rt)
	return &c, nil
}

// toStatusLocked transitions to `to`, through offline first when the direct edge is not
// allowed (a manual restart of a runtime in the middle of a trigger).
func (r *Registry) toStatusLocked(id string, to nudge.Status, reason string, code nudge.Code, mutate func(*store.Runtime)) ([]change, error) {
	cur := nudge.Status(r.rts[id].Status)
	var chs []change
	if !CanTransition(cur, to) && CanTransition(cur, nudge.StatusOffline) {
		c, err := r.transitionLocked(id, nudge.StatusOffline, reason, code, nil)
		if err != nil {
			return nil, err
		}
		chs = c
	}
	c, err := r.transitionLocked(id, to, reason, code, mutate)
	return append(chs, c...), err
}

// relaunch runs the runtime's argv in its existing pane, or in a new window.
func (r *Registry) relaunch(ctx context.Context, rt *store.Runtime) (paneInfo, error) {
	argv := rt.Argv
	if len(argv) == 0 {
		argv = r.cfg.Profiles[rt.Agent].Launch
	}
	if len(argv) == 0 {
		return paneInfo{}, nudge.NewError(nudge.SpawnFailed, "no argv to restart "+rt.RuntimeID)
	}
	w := r.workspace(rt.WorkspaceID)
	panes, err := r.listPanes(ctx, w)
	if err != nil {
		return paneInfo{}, spawnFailed(err)
	}
	r.mu.Lock()
	p, found := r.findPaneLocked(rt, indexPanes(panes), panes)
	r.mu.Unlock()
	if !found {
		return r.newWindow(ctx, rt, argv)
	}
	launch, err := r.launchArgs(rt, argv)
	if err != nil {
		return paneInfo{}, spawnFailed(err)
	}
	args := append([]string{"respawn-pane", "-k", "-t", p.ID}, launch...)
	args = append(args, ";", "set-option", "-p", "-t", p.ID, "remain-on-exit", "on",
		";", "display-message", "-p", "-t", p.ID, newPaneFormat)
	return r.startPane(ctx, rt, args)
}

func (r *Registry) workspace(name string) *workspace {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.workspaceLocked(name)
}

func indexPanes(panes []paneInfo) map[string]paneInfo {
	m := make(map[string]paneInfo, len(panes))
	for _, p := range panes {
		m[p.ID] = p
	}
	return m
}
