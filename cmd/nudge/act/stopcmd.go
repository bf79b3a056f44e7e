package act

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
	"github.com/nudgehq/nudge/panes"
)

// CLI is what the commands of this package need from the command line (package cli).
type CLI struct {
	// WithClient adds the client flags to a command and returns how to get its client
	// once they are parsed.
	WithClient     func(*cobra.Command) func() *api.Client
	Usage          func(format string, a ...any) error // an error that exits 2
	Stdout, Stderr io.Writer
	Complete       cobra.CompletionFunc // runtime ids
	CompleteFirst  cobra.CompletionFunc // one runtime id, the first argument
	Stdin          io.Reader
	Pending        func(msg string) error // an error that exits 3: still pending when the wait ended
	// Args wants n arguments, named by what for the message (a usage error).
	Args func(n int, what string) cobra.PositionalArgs
	// Group is a command that only holds subcommands.
	Group func(use, short string, subs ...*cobra.Command) *cobra.Command
	// Output adds -o json|table (and --json) with the default def and returns whether to
	// print JSON once the flags are parsed.
	Output func(cmd *cobra.Command, def string) func() (bool, error)
}

// StopCommand is `nudge stop RUNTIME_ID... | --workspace WS`.
func StopCommand(cli CLI) *cobra.Command {
	var reason, ws string
	cmd := &cobra.Command{
		Use:   "stop RUNTIME_ID... | --workspace WS [--reason TEXT]",
		Short: "stop runtimes (C-c, then SIGHUP, SIGTERM, SIGKILL by pid); they stay stopped",
		Long: "Stop runtimes: C-c to each one's program, then SIGHUP, SIGTERM and SIGKILL by pid if it has not\n" +
			"ended (serve --stop-timeout, --kill-grace); several at once, by id or every live runtime of a\n" +
			"workspace. A stopped runtime stays stopped: a trigger to it fails with RUNTIME_STOPPED, nothing\n" +
			"starts it again, until `nudge restart RUNTIME_ID`. What it is doing goes to stderr while it waits.",
		Example: "  nudge stop rt_mobile_core.reviewer --reason \"done for today\"\n" +
			"  nudge stop rt_app.a rt_app.b\n  nudge stop --workspace mobile_core",

		ValidArgsFunction: cli.Complete,
	}
	client := cli.WithClient(cmd)
	out := AddOutputFlags(cmd, cli.Stdout, cli.Usage)
	cmd.Flags().StringVar(&reason, "reason", "", "why (kept in the audit log)")
	cmd.Flags().StringVar(&ws, "workspace", "", "stop every live runtime of this workspace")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		asJSON, err := out.AsJSON()
		if err != nil {
			return err
		}
		if (len(args) == 0) == (ws == "") {
			return cli.Usage("want RUNTIME_IDs or --workspace WS (not both)")
		}
		c := client()
		defer c.Close()
		if ws != "" {
			rts, err := c.Runtimes(cmd.Context(), ws)
			if err != nil {
				return err
			}
			for _, rt := range rts {
				if panes.Live(rt.Status) {
					args = append(args, rt.RuntimeID)
				}
			}
			if len(args) == 0 {
				fmt.Fprintf(cli.Stderr, "nothing to stop: workspace %s has no live runtime\n", ws)
				if asJSON {
					return tui.PrintJSON(cli.Stdout, []api.Runtime{})
				}
				return nil
			}
		}
		return Stop(cmd.Context(), cli.Stdout, cli.Stderr, c, args, reason, asJSON)
	}
	return cmd
}

// ActionCommand is pause, resume or restart: POST /v1/runtimes/{id}/{verb}.
func ActionCommand(cli CLI, verb, short string) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:     verb + " RUNTIME_ID [--reason TEXT]",
		Short:   short,
		Example: "  nudge " + verb + " rt_mobile_core.reviewer --reason \"reviewing by hand\"",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cli.Usage("want one RUNTIME_ID, got %d argument(s)", len(args))
			}
			return nil
		},
		ValidArgsFunction: cli.CompleteFirst,
	}
	client := cli.WithClient(cmd)
	out := AddOutputFlags(cmd, cli.Stdout, cli.Usage)
	cmd.Flags().StringVar(&reason, "reason", "", "why (kept in the audit log)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		asJSON, err := out.AsJSON()
		if err != nil {
			return err
		}
		c := client()
		defer c.Close()
		do := map[string]func() (api.Runtime, error){
			"pause":   func() (api.Runtime, error) { return c.Pause(cmd.Context(), args[0], reason) },
			"resume":  func() (api.Runtime, error) { return c.Resume(cmd.Context(), args[0], reason) },
			"restart": func() (api.Runtime, error) { return c.Restart(cmd.Context(), args[0], reason) },
		}[verb]
		if verb == "restart" { // it can take seconds: say what is going on (stderr: stdout is the record)
			fmt.Fprintf(cli.Stderr, "restarting %s: ending its program (C-c, then signals by pid), then launching it again...\n", args[0])
		}
		rt, err := do()
		if err != nil {
			return err
		}
		return PrintRuntime(cli.Stdout, asJSON, map[string]string{"pause": "paused", "resume": "resumed", "restart": "restarted"}[verb], rt)
	}
	return cmd
}
