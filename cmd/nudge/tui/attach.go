package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Attaching: `a` (and `s`) bring the person's own terminal to the selected runtime's pane,
// on whichever tmux server it lives: nudge's own, the person's own tmux server (a
// registered pane: the runtime's tmux socket), or a tmux on another host (through ssh).
//
//   - Inside a client of that tmux server: switch-client -c THAT-CLIENT. The client is
//     named: without -c tmux picks "the best" client of the server, which can be one of
//     nudge's own control clients (moving it to another session, not the person).
//   - Outside tmux, or inside a tmux of another server (switch-client cannot cross
//     servers), or on another host: the dashboard hands the terminal to `tmux attach`
//     (through `ssh -t` for a host) and comes back when the person detaches.
//   - Else it says why not (no pane known; a host but no ssh configured).

// watchAttachHere asks the UI goroutine to attach in place (it owns the terminal).
type watchAttachHere struct {
	argv    []string
	runtime string
}

// ErrOtherServer says that the terminal is not in a client of nudge's tmux server (none,
// or a tmux of another server): switch-client cannot reach it; attach instead.
var ErrOtherServer = errors.New("not inside a client of nudge's tmux server")

// ServerArgv is tmux's argv builder for the tmux server a runtime's pane lives on: socket
// "" is nudge's own (base), an absolute path tmux -S, else a socket name (tmux -L;
// "default" is the server a plain tmux uses). The binary is base's.
func ServerArgv(base func(args ...string) []string, socket string) func(args ...string) []string {
	if socket == "" {
		return base
	}
	flag := "-L"
	if filepath.IsAbs(socket) {
		flag = "-S"
	}
	bin := base()[0]
	return func(args ...string) []string { return append([]string{bin, flag, socket}, args...) }
}

func (ui *watchUI) attach() {
	rt, ok := ui.m.selected()
	if !ok {
		return
	}
	target := orDefault(rt.PaneID, rt.Target)
	if target == "" {
		ui.m.msg = "attach: " + rt.RuntimeID + " has no pane (status " + string(rt.Status) + ")"
		return
	}
	tmux := ServerArgv(ui.tmux, rt.TmuxSocket)
	if rt.Host != "" {
		if ui.ssh == nil {
			ui.m.msg = "attach: " + rt.RuntimeID + " runs on " + rt.Host + " and this dashboard has no ssh: run `nudge attach " + rt.WorkspaceID + " --host " + rt.Host + "`"
			return
		}
		ui.attachHere(ui.ssh(rt.Host, tmux("attach-session", "-t", target)), rt.RuntimeID)
		return
	}
	here := tmux("attach-session", "-t", target)
	if ui.getenv("TMUX") == "" {
		ui.attachHere(here, rt.RuntimeID)
		return
	}
	ui.calls.Go(func() {
		ctx, cancel := shortCtx(ui.ctx)
		defer cancel()
		client, err := UserClient(ctx, tmux, ui.getenv)
		if errors.Is(err, ErrOtherServer) {
			ui.feed.send(watchAttachHere{here, rt.RuntimeID})
			return
		}
		if err != nil {
			ui.feed.send(watchResult{"attach: " + err.Error()})
			return
		}
		if out, err := runTmux(ctx, tmux, "switch-client", "-c", client, "-t", target); err != nil {
			ui.feed.send(watchResult{"switch-client: " + err.Error() + ": " + out})
			return
		}
		ui.feed.send(watchResult{"switched to " + rt.RuntimeID + " (" + target + ")"})
	})
}

// runTmux runs a tmux command (tmux gives its argv) and returns its output.
func runTmux(ctx context.Context, tmux func(args ...string) []string, args ...string) (string, error) {
	argv := tmux(args...)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// UserClient is the tmux client (its name, for switch-client -c) showing the pane this
// process runs in ($TMUX_PANE), on the server tmux runs commands on; ErrOtherServer when
// $TMUX names no client of that server. Control clients (nudge's own) are never chosen.
func UserClient(ctx context.Context, tmux func(args ...string) []string, getenv func(string) string) (string, error) {
	parts := strings.Split(getenv("TMUX"), ",") // socket path, server pid, session
	pid, err := runTmux(ctx, tmux, "display-message", "-p", "#{pid}")
	if err != nil || len(parts) < 2 || parts[1] != pid {
		return "", ErrOtherServer
	}
	out, err := runTmux(ctx, tmux, "list-clients", "-F", "#{client_name}\t#{client_control_mode}\t#{client_flags}\t#{pane_id}\t#{session_name}")
	if err != nil {
		return "", fmt.Errorf("list-clients: %v: %s", err, out)
	}
	pane := getenv("TMUX_PANE")
	session := ""
	if pane != "" {
		session, _ = runTmux(ctx, tmux, "display-message", "-p", "-t", pane, "#{session_name}")
	}
	var inSession string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, "\t")
		if len(f) < 5 || f[1] == "1" || strings.Contains(f[2], "control-mode") {
			continue // nudge's (or anyone's) control client is never the person's terminal
		}
		if pane != "" && f[3] == pane {
			return f[0], nil
		}
		if inSession == "" && f[4] == session {
			inSession = f[0]
		}
	}
	if inSession == "" {
		return "", fmt.Errorf("no tmux client shows this dashboard's pane %s: run `nudge switch RUNTIME` from your terminal", orDefault(pane, "?"))
	}
	return inSession, nil
}

// OutsideTmux is env without TMUX and TMUX_PANE: a tmux client started with it attaches
// even inside another tmux (nested on purpose).
func OutsideTmux(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TMUX=") && !strings.HasPrefix(kv, "TMUX_PANE=") {
			out = append(out, kv)
		}
	}
	return out
}

// attachHere hands the terminal to argv (`tmux attach`, or ssh running it) until the
// person detaches, then draws the dashboard again. It runs on the UI goroutine.
func (ui *watchUI) attachHere(argv []string, runtime string) {
	if ui.attachRun != nil {
		ui.m.msg = ui.attachRun(argv)
		return
	}
	if err := ui.s.Suspend(); err != nil {
		ui.m.msg = "attach: " + err.Error()
		return
	}
	cmd := exec.CommandContext(ui.ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Env = os.Stdin, os.Stdout, os.Stderr, OutsideTmux(os.Environ())
	err := cmd.Run()
	if rerr := ui.s.Resume(); rerr != nil && err == nil {
		err = rerr
	}
	ui.s.Sync()
	if err != nil {
		ui.m.msg = "attach " + runtime + ": " + err.Error()
		return
	}
	ui.m.msg = "back from " + runtime
}
