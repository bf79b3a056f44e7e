package panes

import (
	"context"
	"fmt"
	"strconv"
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
	closed    map[string]time.Time // runtimes whose window was last closed then (collect.go)
	strays    map[string][]Stray   // by workspace: panes no runtime claims (collect.go)
}

// reconcile compares the workspace's records with its panes (seed 001 §11): alive →
// ready (from starting, offline or failed); dead → offline with the exit status; missing
// → REGISTRY_DRIFT then offline; offline managed runtimes are restarted after
// RestartDelay unless stopped or crash-looping (then failed). Runtimes being spawned,
// restarted or stopped are left to that operation, and so is one whose pane was set after
// the panes were listed (a spawn that ended meanwhile: its pane is not in the list).
func (rc *reconciler) reconcile(ctx context.Context, w *workspace) {
	mark := rc.recs.paneMark()
	panes, err := rc.conns.listPanes(ctx, w)
	if err != nil {
		rc.cfg.Logger.Warn("reconcile: list panes", "workspace", w.name, "error", err)
		return
	}
	rc.stats.Sweeps.Add(1)
	byID := make(map[string]paneInfo, len(panes))
	for _, p := range panes {
		byID[p.ID] = p
	}
	var chs []change
	var restarts []string
	var overdue []startOverdue
	drops := map[string]dropped{}
	claimed := map[string]bool{}
	recheck := false
	now := rc.cfg.Now()
	rc.recs.mu.Lock()
	for id, rt := range rc.recs.rts {
		if rt.WorkspaceID != w.name {
			continue
		}
		claimed[rt.PaneID] = true
		p, found := rc.recs.findPaneLocked(rt, byID, panes)
		if found {
			claimed[p.ID] = true
		}
		if rc.recs.busy[id] != "" || rc.recs.paneAt[id] > mark {
			continue // being worked on, or given its pane after the list was taken (it wakes the workspace)
		}
		if o, late := rc.overdueLocked(rt, now); late {
			overdue = append(overdue, o)
		}
		if found && rc.statusPendingLocked(rt, p) {
			recheck = true
			continue
		}
		if !found && len(panes) > 0 && Live(rt.Status) && rc.closedAgainLocked(rt, now) {
			drops[id] = dropped{why: "its window was closed again within " + rc.cfg.ClosedGrace.String() + " of the last time (closed by hand: not recreated)"}
			continue
		}
		c, restart := rc.reconcileOneLocked(rt, byID, panes)
		chs = append(chs, c...)
		if restart {
			rc.recs.busy[id] = "restart-pending"
			restarts = append(restarts, id)
		} else if cur := rc.recs.rts[id]; cur != nil && rc.collectableLocked(cur, now) {
			d := dropped{why: "collected: " + string(cur.Status) + " for " + rc.cfg.Retention.String() + " (the runtime retention)"}
			if found && p.Dead && cur.Managed && w.place().owned(w.name) {
				d.deadPane = p.ID // its dead pane (remain-on-exit) in nudge's own session goes with it
			}
			drops[id] = d
		}
	}
	rc.recs.mu.Unlock()
	rc.noteStrays(w, panes, claimed, now)
	if recheck {
		rc.conns.reap(ctx, w) // a death without its status: make tmux reap it (reap.go)
	}
	rc.recs.notify(chs)
	rc.failStarts(ctx, overdue)
	for _, id := range restarts {
		rc.scheduleRestart(id)
	}
	for id, d := range drops {
		rc.drop(ctx, w, id, d)
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
func (rc *reconciler) statusPendingLocked(rt *nudge.Runtime, p paneInfo) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if !p.Dead || p.ExitStatus != nil || !Live(rt.Status) {
		delete(rc.deadSince, rt.RuntimeID)
		return false
	}
	now := rc.cfg.Now()
	since, ok := rc.deadSince[rt.RuntimeID]
	if !ok {
		rc.deadSince[rt.RuntimeID] = now
		return true
	}
	if now.Sub(since) < statusGrace {
		return true
	}
	delete(rc.deadSince, rt.RuntimeID)
	return false
}

func (rc *reconciler) reconcileOneLocked(rt *nudge.Runtime, byID map[string]paneInfo, panes []paneInfo) ([]change, bool) {
	p, found := rc.recs.findPaneLocked(rt, byID, panes)
	status := rt.Status
	switch {
	case found && !p.Dead && rc.backToShellLocked(rt, p):
		// An adopted pane whose agent ended and left its shell in front (seed 001 §6.8):
		// a crash, not a live agent; it stays offline until an agent runs there again.
		if Live(status) {
			return rc.deathLocked(rt, "the agent exited back to its shell ("+p.Command+")", nudge.PaneDead, nil)
		}
		return nil, false
	case found && !p.Dead:
		return rc.aliveLocked(rt, p), false
	case found && Live(status):
		rc.stats.PaneDeaths.Add(1)
		switch rc.classifyExitLocked(rt, p.ID, p.ExitStatus) {
		case exitClean:
			return rc.exitedLocked(rt, p.ExitStatus)
		case exitOneOff:
			return rc.oneOffEndedLocked(rt, p.ExitStatus)
		}
		return rc.deathLocked(rt, "pane dead", nudge.PaneDead, p.ExitStatus)
	case !found && Live(status):
		rc.stats.Drifts.Add(1)
		rc.recs.auditLocked(rt, "runtime_drift", "pane "+rt.PaneID+" missing", nudge.RegistryDrift,
			map[string]any{"pane_id": rt.PaneID, "target": rt.Target})
		return rc.deathLocked(rt, "pane missing", nudge.RegistryDrift, nil)
	}
	return nil, rc.recs.restartableLocked(rt)
}

// backToShellLocked reports whether rt, an adopted (unmanaged) agent's pane, shows its
// shell in front: the agent it was registered for has ended. A shell runtime's pane and a
// managed one (its program is the pane's own) never count.
func (rc *reconciler) backToShellLocked(rt *nudge.Runtime, p paneInfo) bool {
	if rt.Managed || !isShell(p.Command) {
		return false
	}
	prof := rc.cfg.Profiles[rt.Agent]
	return prof.Pack != "shell" && prof.Name != "shell"
}

func setPane(rt *nudge.Runtime, p paneInfo) {
	rt.PaneID, rt.PID, rt.TmuxPane, rt.TmuxWindow = p.ID, p.PID, p.Index, p.Window
	rt.Target = TargetString(rt.WorkspaceID, p.Window, p.Index)
	if at := placeOf(rt); !at.owned(rt.WorkspaceID) {
		// A user's session: its window names follow what runs in them; the index stays.
		rt.Target = at.session + ":" + strconv.Itoa(p.WindowIndex) + "." + strconv.Itoa(p.Index)
	}
}

// aliveLocked re-adopts a live pane: fields refreshed, and starting → ready once the
// profile's ReadyOn holds; offline → ready (a pane thought dead, found alive after a nudge
// restart); failed → ready only for another process than the one that failed (a runtime
// that failed its start keeps its pane as evidence, and stays failed).
func (rc *reconciler) aliveLocked(rt *nudge.Runtime, p paneInfo) []change {
	status := rt.Status
	waiting := (status == nudge.StatusStarting || status == nudge.StatusFallbackResume) &&
		rc.cfg.Profiles[rt.Agent].ReadyOn == ReadyOnReadiness && rt.Readiness != nudge.Ready
	if !waiting && (status == nudge.StatusStarting || status == nudge.StatusOffline ||
		status == nudge.StatusFallbackResume && rc.recs.oneOff[rt.RuntimeID] == p.ID ||
		status == nudge.StatusFailed && p.PID != rt.PID) {
		delete(rc.recs.oneOff, rt.RuntimeID) // a resume run that is ready for input is the runtime's program now
		chs, err := rc.recs.transitionLocked(rt.RuntimeID, nudge.StatusReady, "pane alive", "",
			func(n *nudge.Runtime) { setPane(n, p); n.ExitStatus = nil })
		rc.recs.logErr("reconcile", rt.RuntimeID, err)
		return chs
	}
	if rt.PaneID == p.ID && rt.PID == p.PID && rt.TmuxWindow == p.Window && rt.TmuxPane == p.Index {
		return nil
	}
	next := cloneRuntime(rt)
	setPane(&next, p)
	next.UpdatedAt = rc.cfg.Now()
	if err := rc.recs.putLocked(&next); err != nil {
		rc.recs.logErr("reconcile", rt.RuntimeID, err)
		return nil
	}
	return []change{{rt: next, prev: status}}
}

// deathLocked records a dead or missing pane: offline with the exit status and the
// failure time; a crash loop then goes on to failed. It reports whether to restart.
func (rc *reconciler) deathLocked(rt *nudge.Runtime, reason string, code nudge.Code, exit *int) ([]change, bool) {
	now := rc.cfg.Now()
	held := rc.recs.held[rt.RuntimeID] > 0
	if rc.recs.resumed[rt.RuntimeID] {
		delete(rc.recs.resumed, rt.RuntimeID)
		rc.recs.noResume[rt.RuntimeID] = true // the resumed session crashed too: fresh next time
	}
	chs, err := rc.recs.transitionLocked(rt.RuntimeID, nudge.StatusOffline, reason, code, func(n *nudge.Runtime) {
		n.ExitStatus = exit
		if !held { // a fallback launch that fails is the chain's failure, not the runtime's
			n.Failures = append(recentFailures(n.Failures, now, rc.cfg.CrashLoopWindow), now)
		}
	})
	if err != nil {
		rc.recs.logErr("reconcile", rt.RuntimeID, err)
		return nil, false
	}
	cur := rc.recs.rts[rt.RuntimeID]
	if !cur.Managed || rc.recs.stopped[cur.RuntimeID] || held {
		return chs, rc.recs.restartableLocked(cur)
	}
	wait, expired := rc.recs.recovery.crashed(cur.RuntimeID, now, rc.cfg.RestartDelay, rc.cfg.RestartMaxDelay, rc.cfg.RecoveryDeadline)
	if expired {
		why := fmt.Sprintf("recovery deadline: still crashing %s after its first crash", rc.cfg.RecoveryDeadline)
		rc.recs.auditLocked(cur, "runtime_restart_failed", why, nudge.SpawnFailed, nil) // seed 001 §11: repeated restart failures
		more, err := rc.recs.transitionLocked(cur.RuntimeID, nudge.StatusFailed, why, "", nil)
		rc.recs.logErr("reconcile", rt.RuntimeID, err)
		return append(chs, more...), false
	}
	if len(cur.Failures) < rc.cfg.CrashLoopFailures {
		if rc.recs.restartableLocked(cur) {
			rc.cfg.Logger.Info("restart after a crash", "runtime", cur.RuntimeID, "wait", wait)
			return chs, true
		}
		return chs, false
	}
	rc.stats.CrashLoops.Add(1)
	why := fmt.Sprintf("crash loop: %d failures within %s", len(cur.Failures), rc.cfg.CrashLoopWindow)
	rc.recs.auditLocked(cur, "runtime_restart_failed", why, nudge.SpawnFailed, nil) // seed 001 §11: repeated restart failures
	more, err := rc.recs.transitionLocked(cur.RuntimeID, nudge.StatusFailed, why, "", nil)
	rc.recs.logErr("reconcile", rt.RuntimeID, err)
	return append(chs, more...), false
}

// oneOffEndedLocked records the end of a fallback resume run: offline, not a crash; the
// runtime's own program is started again once the fallback chain lets go.
func (rc *reconciler) oneOffEndedLocked(rt *nudge.Runtime, exit *int) ([]change, bool) {
	delete(rc.recs.oneOff, rt.RuntimeID)
	chs, err := rc.recs.transitionLocked(rt.RuntimeID, nudge.StatusOffline, "fallback resume run ended", "",
		func(n *nudge.Runtime) { n.ExitStatus = exit })
	rc.recs.logErr("reconcile", rt.RuntimeID, err)
	return chs, err == nil && rc.recs.restartableLocked(rc.recs.rts[rt.RuntimeID])
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
func (rc *reconciler) scheduleRestart(id string) {
	started := rc.g.goAll(func() {
		t := time.NewTimer(rc.recs.recovery.delay(id, rc.cfg.RestartDelay))
		defer t.Stop()
		select {
		case <-rc.g.ctx.Done():
			return
		case <-t.C:
		}
		if _, err := rc.launch.restart(rc.g.ctx, id, "auto restart", true); err != nil {
			rc.cfg.Logger.Warn("auto restart", "runtime", id, "error", err)
		}
	})
	if !started {
		rc.recs.release(id)
	}
}

// subscription reports every pane's liveness: with remain-on-exit a pane's death raises
// no other notification.
const (
	subName   = "nudge-panes"
	subFormat = "#{pane_id} #{pane_dead} #{pane_dead_status} #{pane_dead_signal} #{pane_pid}"
)

// loop reconciles w on every kick and every SweepInterval, until Close: one per
// workspace, started by conns.
func (rc *reconciler) loop(w *workspace) {
	t := time.NewTicker(rc.cfg.SweepInterval)
	defer t.Stop()
	var subscribed *controlmode.Conn
	for {
		select {
		case <-rc.g.ctx.Done():
			return
		case <-w.kick:
		case <-t.C:
		}
		if c := w.current(); c != nil && c != subscribed {
			if err := c.Subscribe(rc.g.ctx, subName, "%*", subFormat); err != nil {
				rc.cfg.Logger.Warn("subscribe", "workspace", w.name, "error", err)
			} else {
				subscribed = c
			}
		}
		rc.reconcile(rc.g.ctx, w)
	}
}
