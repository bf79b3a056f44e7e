package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/api"
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
		err = c.Events(cmd.Context(), api.EventsOptions{Since: since, Follow: follow}, func(ev api.Event) error {
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

// printEvent prints one event on one line: seq, time, type, workspace, what it is about.
func printEvent(w io.Writer, ev api.Event) error {
	var about []string
	add := func(k, v string) {
		if v != "" {
			about = append(about, k+"="+printable(v))
		}
	}
	switch {
	case ev.Trigger != nil:
		t := ev.Trigger
		add("trigger", t.TriggerID)
		add("agent", t.Agent)
		add("state", string(t.State))
		add("result", string(t.Result))
		add("error", string(t.ErrorCode))
	case ev.Runtime != nil:
		add("runtime", ev.Runtime.RuntimeID)
		add("status", string(ev.Runtime.Status))
	}
	if len(ev.Detail) > 0 {
		about = append(about, printable(compactJSON(ev.Detail)))
	}
	ws := ev.Workspace
	if ws == "" {
		ws = "-"
	}
	_, err := fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", ev.Seq, ev.Time.Local().Format("2006-01-02 15:04:05.000"),
		ev.Type, ws, strings.Join(about, " "))
	return err
}
