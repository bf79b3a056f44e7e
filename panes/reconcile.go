package panes

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// reconciler keeps the records true to tmux (seed 001 §11): one loop per workspace
// (started by conns with the workspace's connection loop, stopped by Close through the
// group) reconciles on every event that can change the panes and on the sweep, and an
// automatic restart waits on a goroutine of the group. It owns the dead-pane clock
// (deadSince, its own lock); everything else it changes is the records', under their lock.
type reconciler struct {
	cfg    *Config
	stats  *Stats
	g      *group
	recs   *records
	conns  *conns
	tmux   *tmuxClient
	launch *launcher

	mu sync.Mutex
	// deadSince: runtimes whose pane reads dead before its exit status is known.
	deadSince map[string]time.Time
}

// reconcile compares the workspace's records with its panes (seed 001 §11): alive →
// ready (from starting, offline or failed); dead → offline with the exit status; missing
// → REGISTRY_DRIFT then offline; offline managed runtimes are restarted after
// RestartDelay unless stopped or crash-looping (then failed). Runtimes being spawned,
// restarted or stopped are left to that operation.
func (r *reconciler) reconcile(ctx context.Context, w *workspace) {
	panes, err := r.conns.listPanes(ctx, w)
	if err != nil {
		r.cfg.Logger.Warn("reconcile: list panes", "workspace", w.name, "error", err)
		return
	}
	r.stats.Sweeps.Add(1)
	byID := make(map[string]paneInfo, len(panes))
	for _, p := range panes {
		byID[p.ID] = p
	}
	var chs []change
	var restarts []string
	var overdue []startOverdue
	recheck := false
	now := r.cfg.Now()
	r.recs.mu.Lock()
	for id, rt := range r.recs.rts {
		if rt.WorkspaceID != w.name || r.recs.busy[id] != "" {
			continue
		}
		if o, late := r.overdueLocked(rt, now); late {
			overdue = append(overdue, o)
		}
		if p, found := r.recs.findPaneLocked(rt, byID, panes); found && r.statusPendingLocked(rt, p) {
			recheck = true
			continue
		}
		c, restart := r.reconcileOneLocked(rt, byID, panes)
		chs = append(chs, c...)
		if restart {
			r.recs.busy[id] = "restart-pending"
			restarts = append(restarts, id)
		}
	}
	r.recs.mu.Unlock()
	if recheck {
		r.conns.reap(ctx, w) // a death without its status: make tmux reap it (reap.go)
	}
	r.recs.notify(chs)
	r.failStarts(ctx, overdue)
	for _, id := range restarts {
		r.scheduleRestart(id)
	}
	if recheck {
		time.AfterFunc(statusRecheck, func() { poke(w.kick) })
	}
}

// A pane reads as dead (its pty closed) a moment before tmux has reaped its process and
// knows how it ended: pane_dead_status for an exit, pane_dead_signal for a signal (both
// in tmux 3.3a). A death with neither is held back for up to statusGrace, rechecked every
// statusRecheck, so the record carries the real end and a clean exit is never taken for a
// crash. Reaping takes tmux one turn of its event loop, unless tmux lost the SIGCHLD
// (reap.go): then it takes a reap request, which each recheck sends (at most every
// reapEvery). The grace only delays the rare death whose end tmux has not reaped yet.
const (
	statusGrace   = 3 * time.Second
	statusRecheck = 50 * time.Millisecond
)

// statusPendingLocked reports whether p is dead with its exit status not known yet, and
// first seen so less than statusGrace ago. The records' lock is held.
func (r *reconciler) statusPendingLocked(rt *nudge.Runtime, p paneInfo) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !p.Dead || p.ExitStatus != nil || !Live(rt.Status) {
		delete(r.deadSince, rt.RuntimeID)
		return false
	}
	now := r.cfg.Now()
	since, ok := r.deadSince[rt.RuntimeID]
	if !ok {
		r.deadSince[rt.RuntimeID] = now
		return true
	}
	if now.Sub(since) < statusGrace {
		return true
	}
	delete(r.deadSince, rt.RuntimeID)
	return false
}

func (r *reconciler) reconcileOneLocked(rt *nudge.Runtime, byID map[string]paneInfo, panes []paneInfo) ([]change, bool) {
	p, found := r.recs.findPaneLocked(rt, byID, panes)
	status := rt.Status
	switch {
	case found && !p.Dead && r.backToShellLocked(rt, p):
		// An adopted pane whose agent ended and left its shell in front (seed 001 §6.8):
		// a crash, not a live agent; it stays offline until an agent runs there again.
		if Live(status) {
			return r.deathLocked(rt, "the agent exited back to its shell ("+p.Command+")", nudge.PaneDead, nil)
		}
		return nil, false
	case found && !p.Dead:
		return r.aliveLocked(rt, p), false
	case found && Live(status):
		r.stats.PaneDeaths.Add(1)
		switch r.classifyExitLocked(rt, p.ID, p.ExitStatus) {
		case exitClean:
			return r.exitedLocked(rt, p.ExitStatus)
		case exitOneOff:
			return r.oneOffEndedLocked(rt, p.ExitStatus)
		}
		return r.deathLocked(rt, "pane dead", nudge.PaneDead, p.ExitStatus)
	case !found && Live(status):
		r.stats.Drifts.Add(1)
		r.recs.auditLocked(rt, "runtime_drift", "pane "+rt.PaneID+" missing", nudge.RegistryDrift,
			map[string]any{"pane_id": rt.PaneID, "target": rt.Target})
		return r.deathLocked(rt, "pane missing", nudge.RegistryDrift, nil)
	}
	return nil, r.recs.restartableLocked(rt)
}

// backToShellLocked reports whether rt, an adopted (unmanaged) agent's pane, shows its
// shell in front: the agent it was registered for has ended. A shell runtime's pane and a
// managed one (its program is the pane's own) never count.
func (r *reconciler) backToShellLocked(rt *nudge.Runtime, p paneInfo) bool {
	if rt.Managed || !isShell(p.Command) {
		return false
	}
	prof := r.cfg.Profiles[rt.Agent]
	return prof.Pack != "shell" && prof.Name != "shell"
}

func setPane(rt *nudge.Runtime, p paneInfo) {
	rt.PaneID, rt.PID, rt.TmuxPane, rt.TmuxWindow = p.ID, p.PID, p.Index, p.Window
	rt.Target = TargetString(rt.WorkspaceID, p.Window, p.Index)
}

// aliveLocked re-adopts a live pane: fields refreshed, and starting → ready once the
// profile's ReadyOn holds; offline → ready (a pane thought dead, found alive after a nudge
// restart); failed → ready only for another process than the one that failed (a runtime
// that failed its start keeps its pane as evidence, and stays failed).
func (r *reconciler) aliveLocked(rt *nudge.Runtime, p paneInfo) []change {
	status := rt.Status
	waiting := (status == nudge.StatusStarting || status == nudge.StatusFallbackResume) &&
		r.cfg.Profiles[rt.Agent].ReadyOn == ReadyOnReadiness && rt.Readiness != nudge.Ready
	if !waiting && (status == nudge.StatusStarting || status == nudge.StatusOffline ||
		status == nudge.StatusFallbackResume && r.recs.oneOff[rt.RuntimeID] == p.ID ||
		status == nudge.StatusFailed && p.PID != rt.PID) {
		delete(r.recs.oneOff, rt.RuntimeID) // a resume run that is ready for input is the runtime's program now
		chs, err := r.recs.transitionLocked(rt.RuntimeID, nudge.StatusReady, "pane alive", "",
			func(n *nudge.Runtime) { setPane(n, p); n.ExitStatus = nil })
		r.recs.logErr("reconcile", rt.RuntimeID, err)
		return chs
	}
	if rt.PaneID == p.ID && rt.PID == p.PID && rt.TmuxWindow == p.Window && rt.TmuxPane == p.Index {
		return nil
	}
	next := cloneRuntime(rt)
	setPane(&next, p)
	next.UpdatedAt = r.cfg.Now()
	if err := r.recs.putLocked(&next); err != nil {
		r.recs.logErr("reconcile", rt.RuntimeID, err)
		return nil
	}
	return []change{{rt: next, prev: status}}
}

// deathLocked records a dead or missing pane: offline with the exit status and the
// failure time; a crash loop then goes on to failed. It reports whether to restart.
func (r *reconciler) deathLocked(rt *nudge.Runtime, reason string, code nudge.Code, exit *int) ([]change, bool) {
	now := r.cfg.Now()
	held := r.recs.held[rt.RuntimeID] > 0
	if r.recs.resumed[rt.RuntimeID] {
		delete(r.recs.resumed, rt.RuntimeID)
		r.recs.noResume[rt.RuntimeID] = true // the resumed session crashed too: fresh next time
	}
	chs, err := r.recs.transitionLocked(rt.RuntimeID, nudge.StatusOffline, reason, code, func(n *nudge.Runtime) {
		n.ExitStatus = exit
		if !held { // a fallback launch that fails is the chain's failure, not the runtime's
			n.Failures = append(recentFailures(n.Failures, now, r.cfg.CrashLoopWindow), now)
		}
	})
	if err != nil {
		r.recs.logErr("reconcile", rt.RuntimeID, err)
		return nil, false
	}
	cur := r.recs.rts[rt.RuntimeID]
	if !cur.Managed || r.recs.stopped[cur.RuntimeID] || held {
		return chs, r.recs.restartableLocked(cur)
	}
	wait, expired := r.recs.recovery.crashed(cur.RuntimeID, now, r.cfg.RestartDelay, r.cfg.RestartMaxDelay, r.cfg.RecoveryDeadline)
	if expired {
		why := fmt.Sprintf("recovery deadline: still crashing %s after its first crash", r.cfg.RecoveryDeadline)
		more, err := r.recs.transitionLocked(cur.RuntimeID, nudge.StatusFailed, why, "", nil)
		r.recs.logErr("reconcile", rt.RuntimeID, err)
		return append(chs, more...), false
	}
	if len(cur.Failures) < r.cfg.CrashLoopFailures {
		if r.recs.restartableLocked(cur) {
			r.cfg.Logger.Info("restart after a crash", "runtime", cur.RuntimeID, "wait", wait)
			return chs, true
		}
		return chs, false
	}
	r.stats.CrashLoops.Add(1)
	why := fmt.Sprintf("crash loop: %d failures within %s", len(cur.Failures), r.cfg.CrashLoopWindow)
	more, err := r.recs.transitionLocked(cur.RuntimeID, nudge.StatusFailed, why, "", nil)
	r.recs.logErr("reconcile", rt.RuntimeID, err)
	return append(chs, more...), false
}

// oneOffEndedLocked records the end of a fallback resume run: offline, not a crash; the
// runtime's own program is started again once the fallback chain lets go.
func (r *reconciler) oneOffEndedLocked(rt *nudge.Runtime, exit *int) ([]change, bool) {
	delete(r.recs.oneOff, rt.RuntimeID)
	chs, err := r.recs.transitionLocked(rt.RuntimeID, nudge.StatusOffline, "fallback resume run ended", "",
		func(n *nudge.Runtime) { n.ExitStatus = exit })
	r.recs.logErr("reconcile", rt.RuntimeID, err)
	return chs, err == nil && r.recs.restartableLocked(r.recs.rts[rt.RuntimeID])
}

func recentFailures(fs []time.Time, now time.Time, window time.Duration) []time.Time {
	var out []time.Time
	for _, t := range fs {
		if now.Sub(t) < window {
			out = append(out, t)
		}
	}
	return out
}

// scheduleRestart restarts id after its recovery's delay (RestartDelay, doubling with
// each crash of the recovery) on a goroutine of the registry's group; after Close, none
// (the restart is dropped).
func (r *reconciler) scheduleRestart(id string) {
	started := r.g.goAll(func() {
		t := time.NewTimer(r.recs.recovery.delay(id, r.cfg.RestartDelay))
		defer t.Stop()
		select {
		case <-r.g.ctx.Done():
			return
		case <-t.C:
		}
		if _, err := r.launch.restart(r.g.ctx, id, "auto restart", true); err != nil {
			r.cfg.Logger.Warn("auto restart", "runtime", id, "error", err)
		}
	})
	if !started {
		r.recs.release(id)
	}
}

// subscription reports every pane's liveness: with remain-on-exit a pane's death raises
// no other notification.
const (
	subName   = "nudge-panes"
	subFormat = "#{pane_id} #{pane_dead} #{pane_dead_status} #{pane_dead_signal} #{pane_pid}"
)

// reconcileLoop reconciles on every kick and every SweepInterval.
func (r *reconciler) loop(w *workspace) {
	t := time.NewTicker(r.cfg.SweepInterval)
	defer t.Stop()
	var subscribed *controlmode.Conn
	for {
		select {
		case <-r.g.ctx.Done():
			return
		case <-w.kick:
		case <-t.C:
		}
		if c := w.current(); c != nil && c != subscribed {
			if err := c.Subscribe(r.g.ctx, subName, "%*", subFormat); err != nil {
				r.cfg.Logger.Warn("subscribe", "workspace", w.name, "error", err)
			} else {
				subscribed = c
			}
		}
		r.reconcile(r.g.ctx, w)
	}
}
