package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
)

func eventsCmd(env *cliEnv) *cobra.Command {
	var since uint64
	var follow bool
	cmd := &cobra.Command{
		Use:   "events [--since SEQ] [--follow]",
		Short: "show the daemon's event stream (kept across restarts), optionally following it",
		Long: "Show the events the daemon keeps (runtime and trigger changes, readiness, fallbacks,\n" +
			"alerts) of the workspaces you may read, oldest first; --since SEQ starts after that\n" +
			"sequence number, --follow keeps printing new ones (resuming by itself after a dropped\n" +
			"stream or a daemon restart) until interrupted. -o json prints the daemon's NDJSON lines.\n" +
			"A SEQ older than the kept window (serve --events-keep, --events-max-age), or from\n" +
			"before events the daemon could not write (a full disk, a crash), fails with\n" +
			"EVENTS_EXPIRED and says where to resume.",
		Example: "  nudge events\n  nudge events --since 1200 --follow\n  nudge events --follow -o json | jq 'select(.type==\"trigger\")'",
		Args:    exactArgs(0, "no arguments"),
	}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "table")
	cmd.Flags().Uint64Var(&since, "since", 0, "only events after this sequence number (0: all kept)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new events until interrupted")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		c := o.client(env)
		defer c.Close()
		headed := false
		err = c.Events(cmd.Context(), api.EventsOptions{Since: since, Follow: follow}, func(ev api.Event) error {
			if !asJSON && !headed {
				headed = true
				fmt.Fprintln(env.stdout, tui.EventHeader)
			}
			if asJSON {
				_, err := fmt.Fprintf(env.stdout, "%s\n", ev.Raw)
				return err
			}
			return printEvent(env.stdout, ev)
		})
		if follow && errors.Is(err, context.Canceled) {
			return nil // interrupted: the normal end of --follow
		}
		return err
	}
	return cmd
}
