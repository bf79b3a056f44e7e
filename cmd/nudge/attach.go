package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/panes"
)

// tmuxFlags are the client-side flags naming nudge's tmux server.
type tmuxFlags struct{ tmux, socket, path string }

func addTmuxFlags(fs interface {
	StringVar(*string, string, string, string)
}) *tmuxFlags {
	t, def := &tmuxFlags{}, panes.DefaultConfig() // the daemon's defaults
	fs.StringVar(&t.tmux, "tmux", def.Tmux, "tmux binary")
	fs.StringVar(&t.socket, "tmux-socket", def.SocketName, "tmux server socket name (tmux -L)")
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

func attachCmd(env *cliEnv) *cobra.Command {
	var readOnly bool
	var host, ssh, sshConfig string
	cmd := &cobra.Command{
		Use:     "attach WORKSPACE [--read-only] [--host USER@HOST]",
		Short:   "attach your terminal to a workspace's tmux session",
		Example: "  nudge attach mobile_core\n  nudge attach mobile_core --read-only",
		Args:    exactArgs(1, "one WORKSPACE"),

		ValidArgsFunction: firstArg(completeWorkspaces(env)),
	}
	t := addTmuxFlags(cmd.Flags())
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "attach read-only (watch without typing)")
	cmd.Flags().StringVar(&host, "host", "", "the workspace is on USER@HOST: attach through ssh -t")
	cmd.Flags().StringVar(&ssh, "ssh", panes.DefaultConfig().SSH, "ssh binary (with --host)")
	cmd.Flags().StringVar(&sshConfig, "ssh-config", "", "ssh config file (ssh -F; with --host)")
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		a := []string{"attach-session", "-t", "=" + panes.SessionName(args[0])}
		if readOnly {
			a = append(a, "-r")
		}
		if host != "" {
			// ssh -t, not -T: the remote tmux client needs a terminal.
			argv := controlmode.SSHArgv(ssh, sshConfig, host, t.argv(a...))
			argv[slices.Index(argv, "-T")] = "-t"
			return execProgram(argv)
		}
		return execTmux(t.argv(a...))
	}
	return cmd
}

func switchCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "switch RUNTIME_ID",
		Short: "switch your tmux client to a runtime's pane",
		Long:  "Switch your tmux client to a runtime's pane; outside tmux, attach to it.",
		Args:  exactArgs(1, "one RUNTIME_ID"),

		ValidArgsFunction: firstArg(completeRuntimes(env)),
	}
	o := addClientFlags(cmd)
	t := addTmuxFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := o.client(env)
		defer c.Close()
		rt, err := c.Runtime(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		target := rt.PaneID
		if target == "" {
			target = rt.Target
		}
		if env.getenv("TMUX") == "" {
			return execTmux(t.argv("attach-session", "-t", target))
		}
		argv := t.argv("switch-client", "-t", target)
		out, err := exec.CommandContext(cmd.Context(), argv[0], argv[1:]...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("switch-client: %v: %s", err, out)
		}
		return nil
	}
	return cmd
}
