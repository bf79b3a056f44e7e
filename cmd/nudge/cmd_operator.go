package main

// Commands for an operator at a terminal: status, watch, attach and switch (attach.go has
// the tmux side of the last two, watch.go the dashboard).

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// fetchStatus reads the runtimes and each one's last trigger from the daemon. They are
// decoded into the daemon's own records, so the state words are the status line's.
func fetchStatus(ctx context.Context, c *api.Client, workspace string) ([]statusRow, error) {
	rts, err := fetchRuntimes(ctx, c, workspace)
	if err != nil {
		return nil, err
	}
	rows := make([]statusRow, 0, len(rts))
	for _, rt := range rts {
		row := statusRow{runtimeView: rt, State: stateWord(rt.Runtime)}
		var ts []nudge.Trigger
		if err := c.Do(ctx, "GET", "/v1/triggers?newest=1&limit=1&runtime="+url.QueryEscape(rt.RuntimeID), nil, &ts); err != nil {
			return nil, err
		}
		if len(ts) > 0 {
			row.LastTrigger = &ts[0]
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// fetchRuntimes is GET /v1/runtimes into the daemon's own records.
func fetchRuntimes(ctx context.Context, c *api.Client, workspace string) ([]runtimeView, error) {
	var rts []runtimeView
	path := "/v1/runtimes"
	if workspace != "" {
		path += "?workspace=" + url.QueryEscape(workspace)
	}
	return rts, c.Do(ctx, "GET", path, nil, &rts)
}

func statusCmd(env *cliEnv) *cobra.Command {
	var short bool
	var ws string
	cmd := &cobra.Command{
		Use:   "status [--short] [--workspace WS]",
		Short: "show every runtime's state",
		Long: "Show every runtime's state and its last trigger's receipt. --short prints the one line of\n" +
			"the tmux status bar: [role: STATE] ...",
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
		if short {
			rts, err := fetchRuntimes(ctx, c, ws)
			if err != nil {
				return err
			}
			wss := map[string]bool{}
			for _, rt := range rts {
				wss[rt.WorkspaceID] = true
			}
			_, err = fmt.Fprintln(env.stdout, shortStatus(rts, len(wss) > 1))
			return err
		}
		rows, err := fetchStatus(ctx, c, ws)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(env.stdout, rows)
		}
		return printStatus(env.stdout, rows)
	}
	return cmd
}

// printStatus prints the table of `nudge status`.
func printStatus(w io.Writer, rows []statusRow) error {
	now := time.Now()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKSPACE\tROLE\tPANE\tAGENT\tSTATE\tSTATUS\tSUMMARY\tSINCE\tQUEUE\tLAST TRIGGER\tRECEIPT")
	for _, r := range rows {
		state := r.State
		if r.OperatorBusy {
			state += "*"
		}
		last := "-"
		if r.LastTrigger != nil {
			last = r.LastTrigger.TriggerID + " (" + ago(r.LastTrigger.UpdatedAt, now) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.WorkspaceID, r.Role, orDash(r.PaneID), r.Agent,
			state, r.Status, orDash(truncate(nudge.StripANSI(r.Summary), 40)), ago(r.StatusSince, now), r.QueueDepth,
			truncate(last, 40), receiptWord(r.LastTrigger))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rows) > 0 {
		fmt.Fprintln(w, "(* = a human is typing in the pane)")
	}
	return nil
}

func watchCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "live dashboard",
		Long: "A full-screen live dashboard of every runtime: one snapshot, then the event stream.\n" +
			"Keys: ↑↓ select, ⏎ detail, s switch, p pause/resume, f force, q quit.",
		Args: exactArgs(0, "no arguments"),
	}
	o := addClientFlags(cmd)
	t := addTmuxFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c := o.client(env)
		defer c.Close()
		return runWatch(cmd.Context(), env, c, t)
	}
	return cmd
}
