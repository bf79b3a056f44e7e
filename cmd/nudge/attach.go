package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"syscall"

	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/panes"
)

// tmuxFlags are the client-side flags naming nudge's tmux server.
type tmuxFlags struct{ tmux, socket, path string }

func addTmuxFlags(fs interface {
	StringVar(*string, string, string, string)
}) *tmuxFlags {
	t := &tmuxFlags{}
	fs.StringVar(&t.tmux, "tmux", "tmux", "tmux binary")
	fs.StringVar(&t.socket, "tmux-socket", "nudge", "tmux server socket name (tmux -L)")
	fs.StringVar(&t.path, "tmux-socket-path", "", "tmux server socket path (tmux -S)")
	return t
}

func (t *tmuxFlags) argv(args ...string) []string {
	argv := []string{t.tmux}
	if t.path != "" {
		argv = append(argv, "-S", t.path)
	} else {
		argv = append(argv, "-L", t.socket)
	}
	return append(argv, args...)
}

// execTmux replaces this process with tmux (the terminal is handed over untouched).
func execTmux(argv []string) error {
	bin, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("tmux not found: %w", err)
	}
	return syscall.Exec(bin, argv, os.Environ())
}

// execProgram replaces this process with argv[0] (ssh, for a workspace on another host).
func execProgram(argv []string) error {
	bin, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("%s not found: %w", argv[0], err)
	}
	return syscall.Exec(bin, argv, os.Environ())
}

func runAttach(_ context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("attach", "WORKSPACE", env)
	t := addTmuxFlags(fs)
	readOnly := fs.Bool("read-only", false, "attach read-only (watch without typing)")
	host := fs.String("host", "", "the workspace is on USER@HOST: attach through ssh -t")
	ssh := fs.String("ssh", "ssh", "ssh binary (with --host)")
	sshConfig := fs.String("ssh-config", "", "ssh config file (ssh -F; with --host)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one WORKSPACE")
	}
	a := []string{"attach-session", "-t", "=" + panes.SessionName(fs.Arg(0))}
	if *readOnly {
		a = append(a, "-r")
	}
	if *host != "" {
		// ssh -t, not -T: the remote tmux client needs a terminal.
		argv := controlmode.SSHArgv(*ssh, *sshConfig, *host, t.argv(a...))
		argv[slices.Index(argv, "-T")] = "-t"
		return execProgram(argv)
	}
	return execTmux(t.argv(a...))
}

func runSwitch(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("switch", "RUNTIME_ID", env)
	o := addClientFlags(fs)
	t := addTmuxFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one RUNTIME_ID")
	}
	var rt runtimeView
	if err := o.client(env).do(ctx, "GET", "/v1/runtimes/"+url.PathEscape(fs.Arg(0)), nil, &rt); err != nil {
		return err
	}
	target := rt.PaneID
	if target == "" {
		target = rt.Target
	}
	if env.getenv("TMUX") == "" {
		return execTmux(t.argv("attach-session", "-t", target))
	}
	out, err := exec.CommandContext(ctx, t.argv("switch-client", "-t", target)[0], t.argv("switch-client", "-t", target)[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("switch-client: %v: %s", err, out)
	}
	return nil
}
