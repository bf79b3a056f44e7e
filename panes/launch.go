package panes

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/nudgehq/nudge"
)

// Launches for the fallback chain (package ack): a resume or spawn command run once,
// either in the runtime's own pane or in a new window beside it.

// relaunchWith is Registry.RelaunchWith.
func (l *launcher) relaunchWith(ctx context.Context, id string, argv []string, reason string) (paneID, ended string, err error) {
	if len(argv) == 0 {
		return "", "", nudge.NewError(nudge.SpawnFailed, "empty argv")
	}
	if cur, ok := l.recs.Get(id); ok && UsersPane(cur) {
		return "", "", nudge.NewError(nudge.Conflict, fmt.Sprintf("the pane of %s is in %s, the user's own: "+
			"a fallback never ends or replaces the program there (the user's shell)", id, placeOf(&cur)))
	}
	rt, e, err := l.restartWith(ctx, id, reason, argv)
	if len(e.PIDs) > 0 {
		ended = e.How
	}
	if err != nil {
		return "", ended, err
	}
	return rt.PaneID, ended, nil
}

// launchWindow is Registry.LaunchWindow.
func (l *launcher) launchWindow(ctx context.Context, workspace, name string, argv []string) (string, error) {
	if err := validName(name); err != nil {
		return "", nudge.NewError(nudge.BadRequest, "window name: "+err.Error())
	}
	if len(argv) == 0 {
		return "", nudge.NewError(nudge.SpawnFailed, "empty argv")
	}
	at := l.conns.placeOf(workspace)
	if !at.owned(workspace) {
		return "", notOwned(workspace, at, "opens windows")
	}
	if at.host == "" {
		// Run the program found on the daemon's PATH, by its path.
		prog, err := ResolveLauncher(argv[0], LauncherRule{Allowed: []string{"*"}})
		if err != nil {
			return "", nudge.NewError(nudge.SpawnFailed, err.Error())
		}
		argv = append([]string{prog}, argv[1:]...)
	}
	// A unique name lets the same tmux invocation set remain-on-exit on the new window
	// before its process can exit.
	name += "-" + strconv.FormatInt(l.cfg.Now().UnixNano()%1e6, 36)
	sess := "=" + SessionName(workspace) + ":"
	host := at.server
	launch := func(create ...string) (string, error) {
		args := append(append(create, "-n", name, "-P", "-F", "#{pane_id}", "--", "env"), argv...)
		return l.tmux.pastEnd(ctx, host, append(args, ";", "set-option", "-p", "-t", sess+name, "remain-on-exit", "on")...)
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
	l.conns.wake(workspace)
	pane := strings.TrimSpace(out)
	if paneNum(pane) < 0 {
		return "", nudge.NewError(nudge.SpawnFailed, fmt.Sprintf("unexpected tmux reply %q", out))
	}
	return pane, nil
}
