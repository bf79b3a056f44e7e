package cli

// Commands for an operator at a terminal: status, watch, attach and switch (attach.go has
// the tmux side of the last two; package tui the dashboard and the status words).

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/paths"
	"github.com/nudgehq/nudge/cmd/nudge/statusfiles"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/panes"
	"github.com/nudgehq/nudge/store"
)

func statusCmd(env *cliEnv) *cobra.Command {
	var short bool
	var ws string
	cmd := &cobra.Command{
		Use:   "status [--short] [--workspace WS]",
		Short: "show every runtime's state",
		Long: "Show every runtime's state and its last trigger's receipt. --short prints the one line of\n" +
			"the tmux status bar: [role: STATE] ...\n" +
			"With the daemon down it shows the last state its store holds (read-only), says since when,\n" +
			"and exits 1.",
		Args: exactArgs(0, "no arguments"),
	}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "table")
	cmd.Flags().BoolVar(&short, "short", false, "one line for a tmux status bar: [role: STATE] ...")
	cmd.Flags().StringVar(&ws, "workspace", "", "only this workspace")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		ctx, cancel := shortCtx(cmd.Context())
		defer cancel()
		c := o.client(env)
		defer c.Close()
		rows, err := tui.FetchStatus(ctx, c, ws, short)
		var stale error
		prefix := ""
		if snap, ok := lastKnown(o.stateDir, err); ok {
			rows, err, stale = tui.LastKnown(snap.Runtimes, snap.Last, ws), nil, snap.stale()
			for i := range rows {
				rows[i].StaleAsOf = &snap.Written
			}
			prefix = "(stale " + snap.Written.Format("15:04") + ") "
		}
		if err != nil {
			return err
		}
		switch {
		case short:
			_, err = fmt.Fprintln(env.stdout, prefix+tui.ShortStatus(rows))
		case asJSON:
			err = printJSON(env.stdout, rows)
		default:
			err = tui.PrintStatus(env.stdout, rows, time.Now())
		}
		return cmp.Or(err, stale)
	}
	return cmd
}

// lastState is the state a daemon that does not answer left behind.
type lastState struct {
	store.Snapshot
	files bool // read from its status files, not its store
}

// lastKnown reads the state the daemon last left when err says no daemon answered; ok
// only then, and if it could be read (statusfiles.LastKnown).
func lastKnown(stateDir string, err error) (lastState, bool) {
	if !errors.Is(err, api.ErrUnreachable) {
		return lastState{}, false
	}
	snap, files, ok := statusfiles.LastKnown(stateDir, paths.StoreFile(stateDir))
	return lastState{Snapshot: snap, files: files}, ok
}

func (s lastState) stale() staleError { return staleError{s.Written, s.files} }

// staleError ends a command that printed the last known state: exit 1, saying so.
type staleError struct {
	written time.Time
	files   bool
}

func (e staleError) Error() string {
	if e.files {
		return tui.StaleFilesNote(e.written, time.Now())
	}
	return tui.StaleNote(e.written, time.Now())
}

func watchCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "live dashboard",
		Long: "A full-screen live dashboard of every runtime, grouped by workspace: one snapshot, then\n" +
			"the event stream. Pages: the list, a runtime (its trigger timeline, readiness changes and\n" +
			"live screen) and a trigger (its stamps and audit story).\n" +
			"Keys: ↑↓ j/k g/G Home/End select (the mouse too), ⏎ open, l live tail, t trigger, p pause/resume,\n" +
			"x stop, y/n/1-9 answer a dialog, a attach (on the runtime's own tmux server, or its host\n" +
			"through ssh), : commands, / filter, o sort, f force, r refresh, Esc back, q quit, ? help.",
		Args: exactArgs(0, "no arguments"),
	}
	o := addClientFlags(cmd)
	t := addTmuxFlags(cmd.Flags())
	var ssh, sshConfig string
	cmd.Flags().StringVar(&ssh, "ssh", panes.DefaultConfig().SSH, "ssh binary (to attach to a runtime on another host)")
	cmd.Flags().StringVar(&sshConfig, "ssh-config", "", "ssh config file (ssh -F)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c := o.client(env)
		defer c.Close()
		sshArgv := func(host string, remote []string) []string {
			argv := controlmode.SSHArgv(ssh, sshConfig, host, remote)
			if i := slices.Index(argv, "-T"); i >= 0 {
				argv[i] = "-t" // the remote tmux client needs a terminal
			}
			return argv
		}
		return tui.Run(cmd.Context(), tui.Config{Client: c, Getenv: env.getenv, TmuxArgv: t.argv, SSHArgv: sshArgv})
	}
	return cmd
}
