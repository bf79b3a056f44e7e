package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/tui"
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

// execProgram replaces this process with argv[0] (tmux, or ssh for a workspace on
// another host): the terminal is handed over untouched. Without $TMUX, so that a tmux
// client attaches inside another tmux too.
func execProgram(argv []string) error {
	bin, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("%s not found: %w", argv[0], err)
	}
	return syscall.Exec(bin, argv, tui.OutsideTmux(os.Environ()))
}

// bringTerminal brings the person's terminal to target on nudge's tmux server: inside a
// client of that server it switches that client (named: tmux's own choice may be one of
// nudge's control clients), else it becomes `tmux attach-session -t target attach...`.
func bringTerminal(ctx context.Context, env *cliEnv, t *tmuxFlags, target string, attach ...string) error {
	if env.getenv("TMUX") != "" {
		client, err := tui.UserClient(ctx, t.argv, env.getenv)
		if err == nil {
			argv := t.argv("switch-client", "-c", client, "-t", target)
			if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
				return fmt.Errorf("switch-client: %v: %s", err, out)
			}
			return nil
		}
		if !errors.Is(err, tui.ErrOtherServer) {
			return err
		}
	}
	return execProgram(t.argv(append([]string{"attach-session", "-t", target}, attach...)...))
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
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		session := "=" + panes.SessionName(args[0])
		a := []string{"attach-session", "-t", session}
		if readOnly {
			a = append(a, "-r")
		}
		if host == "" && !readOnly {
			return bringTerminal(cmd.Context(), env, t, session)
		}
		if host != "" {
			// ssh -t, not -T: the remote tmux client needs a terminal.
			argv := controlmode.SSHArgv(ssh, sshConfig, host, t.argv(a...))
			argv[slices.Index(argv, "-T")] = "-t"
			return execProgram(argv)
		}
		return execProgram(t.argv(a...))
	}
	return cmd
}

func switchCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "switch RUNTIME_ID",
		Short: "switch your tmux client to a runtime's pane",
		Long: "Switch your tmux client to a runtime's pane when you are in a client of nudge's tmux server;\n" +
			"outside tmux, or inside another tmux server, attach to it (detach to come back).",
		Args: exactArgs(1, "one RUNTIME_ID"),

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
		if rt.Host != "" {
			return fmt.Errorf("%s runs on %s: nudge attach %s --host %s", rt.RuntimeID, rt.Host, rt.WorkspaceID, rt.Host)
		}
		if s := rt.TmuxSocket; s != "" { // a session of the user's own tmux server
			t.socket, t.path = s, ""
			if filepath.IsAbs(s) {
				t.path = s
			}
		}
		return bringTerminal(cmd.Context(), env, t, cmp.Or(rt.PaneID, rt.Target))
	}
	return cmd
}
