package panes

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nudgehq/nudge"
)

// restart does the work; auto restarts run only if the runtime is still pending one.
func (l *launcher) restart(ctx context.Context, id, reason string, auto bool) (nudge.Runtime, error) {
	rt, _, err := l.relaunchAs(ctx, id, reason, auto, nil)
	return rt, err
}

// restartWith runs once (not the runtime's own argv) in the runtime's pane.
func (l *launcher) restartWith(ctx context.Context, id, reason string, once []string) (nudge.Runtime, Ended, error) {
	return l.relaunchAs(ctx, id, reason, false, once)
}

// relaunchAs relaunches; Ended says how the old program ended (PIDs nil when none ran).
func (l *launcher) relaunchAs(ctx context.Context, id, reason string, auto bool, once []string) (nudge.Runtime, Ended, error) {
	rt, err := l.beginRestart(id, auto)
	if err != nil || rt == nil {
		return nudge.Runtime{}, Ended{}, err
	}
	defer l.recs.release(id)
	l.stats.Restarts.Add(1)
	launch, how := rt, "fresh"
	switch {
	case once != nil:
		c := *rt
		c.Argv = once
		launch, how = &c, l.onceKind(rt, once)
	default:
		if argv := l.crashResumeArgv(rt); argv != nil {
			c := *rt
			c.Argv = argv
			launch, how = &c, "resume"
			reason += " (resuming session " + rt.SessionID + ")"
		}
	}
	launch = l.channelAgain(launch, how)
	l.enterStage(id, how, reason)
	p, e, err := l.relaunch(ctx, launch)
	l.recs.mu.Lock()
	if len(e.PIDs) > 0 {
		// What ended the old program (or, not OK, what it outlived).
		ev, code := "runtime_program_ended", nudge.Code("")
		if !e.OK() {
			ev, code = "runtime_end_failed", nudge.SpawnFailed
		}
		l.recs.auditLocked(rt, ev, reason, code, e)
	}
	var chs []change
	if err != nil {
		// Seed 001 §13's structured event, beside the status change it causes.
		l.recs.auditLocked(rt, "runtime_restart_failed", reason+": "+err.Error(), nudge.SpawnFailed, map[string]string{"how": how})
		chs, _ = l.recs.toStatusLocked(id, nudge.StatusFailed, "restart failed: "+err.Error(), nudge.SpawnFailed, nil)
	} else {
		chs, err = l.launchedLocked(id, p, how, reason)
	}
	l.recs.mu.Unlock()
	l.recs.notify(chs)
	l.conns.wake(rt.WorkspaceID)
	if err != nil {
		return nudge.Runtime{}, e, err
	}
	got, _ := l.recs.Get(id)
	return got, e, nil
}

// channelAgain is rt with the flags that open its agent's channel (and permission hook)
// again, as its spawn did, when the relaunch runs nudge's own launch of the agent: the
// profile's (a fresh start) or its interactive resume (after a crash, or a fallback that
// resumes the session in the pane). An argv the caller gave at spawn, a one-off resume
// run, or a launch whose channel cannot be checked keeps its argv.
func (l *launcher) channelAgain(rt *nudge.Runtime, how string) *nudge.Runtime {
	prof := l.cfg.Profiles[rt.Agent]
	argv := rt.Argv
	if len(argv) == 0 {
		argv = prof.Launch
	}
	if prof.ChannelFlag == "" || (how != "resume" && how != "live-resume" && !slices.Equal(argv, prof.Launch)) || slices.Contains(argv, prof.ChannelFlag) {
		return rt
	}
	with, err := l.withChannel(rt, SpawnRequest{}, argv)
	if err != nil || len(with) == len(argv) {
		return rt
	}
	c := *rt
	c.Argv = with
	return &c
}

// crashResumeArgv is the argv that restarts a crashed runtime through its agent's
// interactive resume (seed 003): when its profile has one, its session id is known and
// valid, its last end was not clean, and the last resume did not crash too. nil = fresh.
func (l *launcher) crashResumeArgv(rt *nudge.Runtime) []string {
	switch rt.Status {
	case nudge.StatusOffline, nudge.StatusFailed:
	default:
		return nil
	}
	if rt.ExitStatus != nil && *rt.ExitStatus == 0 {
		return nil
	}
	l.recs.mu.Lock()
	skip := l.recs.noResume[rt.RuntimeID]
	l.recs.mu.Unlock()
	if skip {
		return nil
	}
	return l.cfg.Profiles[rt.Agent].ResumeInteractiveArgv(rt.SessionID)
}

// onceKind names a one-off launch: "oneoff-resume" for the profile's resume command (a
// run that ends), "live-resume" for its resume with no prompt (ResumeLiveArgv: the
// resumed agent becomes the runtime's program and is typed the prompt), else
// "oneoff-spawn" (a fresh agent, which becomes the runtime's program).
func (l *launcher) onceKind(rt *nudge.Runtime, argv []string) string {
	prof := l.cfg.Profiles[rt.Agent]
	switch {
	case slices.Equal(argv, prof.ResumeLiveArgv(rt.SessionID)):
		return "live-resume"
	case prof.IsResume(argv):
		return "oneoff-resume"
	}
	return "oneoff-spawn"
}

// enterStage shows a fallback launch in the state machine before it starts: resume →
// fallback_resume, spawn → spawn_recovery (seed 001 §9).
func (l *launcher) enterStage(id, how, reason string) {
	to := map[string]nudge.Status{"oneoff-resume": nudge.StatusFallbackResume, "live-resume": nudge.StatusFallbackResume,
		"oneoff-spawn": nudge.StatusSpawnRecovery}[how]
	if to == "" {
		return
	}
	l.recs.mu.Lock()
	var chs []change
	if rt := l.recs.rts[id]; rt != nil && rt.Status != to {
		var err error
		chs, err = l.recs.toStatusLocked(id, to, reason, "", nil)
		l.recs.logErr("fallback stage", id, err)
	}
	l.recs.mu.Unlock()
	l.recs.notify(chs)
}

// launchedLocked records a launch in the runtime's place: a fallback resume run keeps
// fallback_resume while it runs (its end brings the runtime's own program back); anything
// else is the runtime's program, starting. The records' lock is held.
func (l *launcher) launchedLocked(id string, p paneInfo, how, reason string) ([]change, error) {
	delete(l.recs.oneOff, id)
	delete(l.recs.resumed, id)
	switch how {
	case "oneoff-resume":
		l.recs.oneOff[id] = p.ID
		var chs []change
		var err error
		if nudge.Status(l.recs.rts[id].Status) != nudge.StatusFallbackResume {
			chs, err = l.recs.toStatusLocked(id, nudge.StatusFallbackResume, reason, "", nil)
		}
		if err == nil {
			var more []change
			more, err = l.recs.updateLocked(id, func(n *nudge.Runtime) { setPane(n, p); n.ExitStatus = nil })
			chs = append(chs, more...)
		}
		return chs, err
	case "resume", "live-resume":
		l.recs.resumed[id] = true
	case "fresh":
		delete(l.recs.noResume, id)
	}
	return l.recs.toStatusLocked(id, nudge.StatusStarting, reason, "", func(n *nudge.Runtime) {
		setPane(n, p)
		n.ExitStatus = nil
		n.Restarts++
	})
}

// beginRestart marks the runtime restarting. For an auto restart it returns nil, nil
// when the restart is no longer wanted (stopped, deregistered, already recovered).
func (l *launcher) beginRestart(id string, auto bool) (*nudge.Runtime, error) {
	l.recs.mu.Lock()
	defer l.recs.mu.Unlock()
	rt, ok := l.recs.rts[id]
	if auto {
		if l.recs.busy[id] != "restart-pending" {
			return nil, nil
		}
		if !ok || !l.recs.restartableLocked(rt) {
			delete(l.recs.busy, id)
			return nil, nil
		}
	} else {
		if !ok {
			return nil, notFound(id)
		}
		if op := l.recs.busy[id]; op != "" && op != "restart-pending" {
			return nil, nudge.NewError(nudge.Conflict, fmt.Sprintf("runtime %s is busy (%s)", id, op))
		}
		delete(l.recs.stopped, id)
		l.recs.clearStoppedLocked(id)
	}
	l.recs.busy[id] = "restarting"
	c := cloneRuntime(rt)
	return &c, nil
}

// relaunch runs the runtime's argv in its existing pane, or in a new window. The old
// program is ended first, by pid (end.go): nothing is launched over a program that is
// still running.
func (l *launcher) relaunch(ctx context.Context, rt *nudge.Runtime) (paneInfo, Ended, error) {
	argv := rt.Argv
	if len(argv) == 0 {
		argv = l.cfg.Profiles[rt.Agent].Launch
	}
	if len(argv) == 0 {
		return paneInfo{}, Ended{}, nudge.NewError(nudge.SpawnFailed, "no argv to restart "+rt.RuntimeID)
	}
	w := l.conns.workspace(rt.WorkspaceID)
	p, found, err := l.findPane(ctx, w, rt)
	if err != nil {
		return paneInfo{}, Ended{}, spawnFailed(err)
	}
	if !found {
		e := l.ender.endLeftovers(ctx, w, rt)
		if !e.OK() {
			return paneInfo{}, e, endFailed(e)
		}
		p, err := l.newWindow(ctx, rt, argv)
		return p, e, err
	}
	launch, err := l.launchArgs(rt, argv)
	if err != nil {
		return paneInfo{}, Ended{}, spawnFailed(err)
	}
	e, ran := l.ender.endForRelaunch(ctx, w, p)
	if !e.OK() {
		return paneInfo{}, e, endFailed(e)
	}
	if ran && len(e.PIDs) > 0 {
		// A pane without remain-on-exit closed with its program.
		if p, found, err = l.findPane(ctx, w, rt); err != nil {
			return paneInfo{}, e, spawnFailed(err)
		} else if !found {
			p, err := l.newWindow(ctx, rt, argv)
			return p, e, err
		}
	}
	p, err = l.replacePane(ctx, rt, p, launch)
	return p, e, err
}

// findPane lists the workspace's panes and finds the runtime's.
func (l *launcher) findPane(ctx context.Context, w *workspace, rt *nudge.Runtime) (paneInfo, bool, error) {
	panes, err := l.conns.listPanes(ctx, w)
	if err != nil {
		return paneInfo{}, false, err
	}
	p, found := l.recs.findPane(rt, panes)
	return p, found, nil
}

// replacePane starts launch in a new pane that takes p's place (same window, same slot in
// the layout) and kills p, in one tmux command list: a new window, remain-on-exit on its
// pane, swap-pane into p's slot, kill-window on what now holds p. The pane id changes.
//
// It does not use respawn-pane: tmux 3.3a keeps the pane's read offsets across a respawn
// (fixed upstream in 2026, GitHub issue 5498), and when a control client (nudge itself)
// had not consumed all of the old program's output, the new program's first read
// underflows them and the server segfaults.
func (l *launcher) replacePane(ctx context.Context, rt *nudge.Runtime, p paneInfo, launch []string) (paneInfo, error) {
	sess := "=" + placeOf(rt).session + ":"
	tmp := sess + "nudge-respawn-" + strconv.FormatInt(l.cfg.Now().UnixNano()%1e9, 36)
	args := append([]string{"new-window", "-d", "-t", sess, "-n", tmp[len(sess):]}, launch...)
	args = append(args,
		";", "set-option", "-p", "-t", tmp, "remain-on-exit", "on",
		";", "display-message", "-p", "-t", tmp, "#{pane_id} #{pane_pid}",
		";", "swap-pane", "-d", "-s", tmp, "-t", p.ID,
		";", "kill-window", "-t", tmp)
	out, err := l.tmux.pastEnd(ctx, serverOf(rt), args...)
	if err != nil {
		return paneInfo{}, spawnFailed(err)
	}
	f := strings.Fields(out)
	if len(f) != 2 || paneNum(f[0]) < 0 {
		return paneInfo{}, nudge.NewError(nudge.SpawnFailed, fmt.Sprintf("unexpected tmux reply %q", out))
	}
	n := paneInfo{ID: f[0], Session: placeOf(rt).session, Window: p.Window, Index: p.Index, WindowIndex: p.WindowIndex}
	n.PID, _ = strconv.Atoi(f[1])
	return n, nil
}

func indexPanes(panes []paneInfo) map[string]paneInfo {
	m := make(map[string]paneInfo, len(panes))
	for _, p := range panes {
		m[p.ID] = p
	}
	return m
}
