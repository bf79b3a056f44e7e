package panes

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nudgehq/nudge"
)

// Launches for the fallback chain (package ack): a resume or spawn command run once,
// either in the runtime's own pane or in a new window beside it.

// HoldRestarts stops automatic restarts of a runtime (and keeps deaths out of its crash
// count) until the returned release is called: the fallback chain owns the pane meanwhile.
func (r *records) HoldRestarts(id string) (release func()) {
	r.mu.Lock()
	r.held[id]++
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			if r.held[id]--; r.held[id] <= 0 {
				delete(r.held, id)
			}
			r.mu.Unlock()
		})
	}
}

// relaunchWith is Registry.RelaunchWith.
func (r *launcher) relaunchWith(ctx context.Context, id string, argv []string, reason string) (paneID, ended string, err error) {
	if len(argv) == 0 {
		return "", "", nudge.NewError(nudge.SpawnFailed, "empty argv")
	}
	rt, e, err := r.restartWith(ctx, id, reason, argv)
	if len(e.PIDs) > 0 {
		ended = e.How
	}
	if err != nil {
		return "", ended, err
	}
	return rt.PaneID, ended, nil
}

// launchWindow is Registry.LaunchWindow.
func (r *launcher) launchWindow(ctx context.Context, workspace, name string, argv []string) (string, error) {
	if err := validName(name); err != nil {
		return "", nudge.NewError(nudge.BadRequest, "window name: "+err.Error())
	}
	if len(argv) == 0 {
		return "", nudge.NewError(nudge.SpawnFailed, "empty argv")
	}
	if r.conns.hostOf(workspace) == "" {
		// Run the program found on the daemon's PATH, by its path.
		prog, err := ResolveLauncher(argv[0], LauncherRule{Allowed: []string{"*"}})
		if err != nil {
			return "", nudge.NewError(nudge.SpawnFailed, err.Error())
		}
		argv = append([]string{prog}, argv[1:]...)
	}
	// A unique name lets the same tmux invocation set remain-on-exit on the new window
	// before its process can exit.
	name += "-" + strconv.FormatInt(r.cfg.Now().UnixNano()%1e6, 36)
	sess := "=" + SessionName(workspace) + ":"
	host := r.conns.hostOf(workspace)
	launch := func(create ...string) (string, error) {
		args := append(append(create, "-n", name, "-P", "-F", "#{pane_id}", "--", "env"), argv...)
		return r.tmux.launchRun(ctx, host, append(args, ";", "set-option", "-p", "-t", sess+name, "remain-on-exit", "on")...)
	}
	out, err := launch("new-window", "-d", "-t", sess)
	if isMissing(err) {
		// The session (or the whole tmux server) is gone — killed, or restarting: the
		// launch brings the session back instead of failing the trigger.
		if out, err = launch("new-session", "-d", "-s", SessionName(workspace)); retryable(err) {
			out, err = launch("new-window", "-d", "-t", sess) // a restart created it meanwhile
		}
	}
	if err != nil {
		return "", spawnFailed(err)
	}
	r.conns.wake(workspace)
	pane := strings.TrimSpace(out)
	if paneNum(pane) < 0 {
		return "", nudge.NewError(nudge.SpawnFailed, fmt.Sprintf("unexpected tmux reply %q", out))
	}
	return pane, nil
}

// launchRun runs a launching tmux command, again (up to launchTries times, launchBackoff
// apart) while tmux says its server went away under it (killed or restarting): such a
// command created nothing that survives, so running it again is safe.
func (r *tmuxClient) launchRun(ctx context.Context, host string, args ...string) (string, error) {
	for try := 1; ; try++ {
		out, err := r.run(ctx, host, args...)
		if err == nil || try == launchTries || !serverLost(err) {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(launchBackoff):
		}
	}
}

const (
	launchTries   = 5
	launchBackoff = 200 * time.Millisecond
)

// serverLost: the tmux server ended while it ran the command.
func serverLost(err error) bool {
	var te *tmuxError
	if !errors.As(err, &te) {
		return false
	}
	for _, s := range []string{"server exited unexpectedly", "lost server", "Connection refused", "Connection reset"} {
		if strings.Contains(te.Stderr, s) {
			return true
		}
	}
	return false
}

// paneExitWait is Registry.PaneExit.
func (r *conns) paneExitWait(ctx context.Context, workspace, paneID string) (bool, *int, error) {
	for try := 1; ; try++ {
		alive, dead, status, err := r.paneExit(ctx, workspace, paneID)
		if err != nil || alive || !dead || status != nil || try*int(statusRecheck) >= int(time.Second) {
			return alive, status, err
		}
		r.reap(ctx, r.workspace(workspace))
		select {
		case <-ctx.Done():
			return false, nil, nil
		case <-time.After(statusRecheck):
		}
	}
}

// paneExit reads the pane once: alive, or dead with its status if tmux knows it.
func (r *conns) paneExit(ctx context.Context, workspace, paneID string) (alive, dead bool, status *int, err error) {
	// display-message expands its formats empty for a missing target instead of failing.
	out, err := r.tmux.run(ctx, r.hostOf(workspace), "display-message", "-p", "-t", paneID, "#{pane_id} #{pane_dead} #{pane_dead_status} #{pane_dead_signal}")
	if isMissing(err) {
		return false, false, nil, nil
	}
	if err != nil {
		return false, false, nil, err
	}
	f := strings.Fields(out)
	if len(f) == 0 || f[0] != paneID {
		return false, false, nil, nil
	}
	f = f[1:]
	if len(f) == 0 || f[0] != "1" {
		return true, false, nil, nil
	}
	var st, signal string
	if len(f) > 1 {
		st = f[1]
	}
	if len(f) > 2 {
		signal = f[2]
	}
	if _, err := strconv.Atoi(st); err != nil && signal == "" {
		return false, true, nil, nil
	}
	return false, true, exitStatus(st, signal), nil
}
