package main

// Commands for an operator at a terminal: status, watch, attach and switch (attach.go has
// the tmux side of the last two, watch.go the dashboard).

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
)

// statusRow is one line of `nudge status`: a runtime and its last trigger.
type statusRow struct {
	api.Runtime
	State       string       `json:"state"`
	LastTrigger *api.Trigger `json:"last_trigger,omitempty"`
}

// fetchStatus reads the runtimes and each one's last trigger from the daemon.
func fetchStatus(ctx context.Context, c *api.Client, workspace string) ([]statusRow, error) {
	rts, err := c.Runtimes(ctx, workspace)
	if err != nil {
		return nil, err
	}
	rows := make([]statusRow, 0, len(rts))
	for _, rt := range rts {
		row := statusRow{Runtime: rt, State: apiStateWord(rt)}
		ts, err := c.Triggers(ctx, api.TriggerFilter{RuntimeID: rt.RuntimeID, Newest: true, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(ts) > 0 {
			row.LastTrigger = &ts[0]
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// apiShortStatus is shortStatus of runtimes as package api has them.
func apiShortStatus(rts []api.Runtime, qualify bool) string {
	es := make([]statusEntry, 0, len(rts))
	for _, rt := range rts {
		es = append(es, statusEntry{rt.WorkspaceID, rt.Role, rt.Status, apiStateWord(rt), rt.OperatorBusy, rt.QueueDepth})
	}
	return shortLine(es, qualify)
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
			rts, err := c.Runtimes(ctx, ws)
			if err != nil {
				return err
			}
			wss := map[string]bool{}
			for _, rt := range rts {
				wss[rt.WorkspaceID] = true
			}
			_, err = fmt.Fprintln(env.stdout, apiShortStatus(rts, len(wss) > 1))
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

// lastReceipt is the RECEIPT column: the last trigger's receipt word, "-" without one.
func lastReceipt(t *api.Trigger) string {
	if t == nil {
		return "-"
	}
	return apiReceiptWord(*t)
}

// printStatus prints the table of `nudge status`.
func printStatus(w io.Writer, rows []statusRow) error {
	now := time.Now()
	err := printRecords(w, false, rows, "WORKSPACE\tROLE\tPANE\tAGENT\tSTATE\tSTATUS\tSUMMARY\tSINCE\tQUEUE\tLAST TRIGGER\tRECEIPT", func(r statusRow) string {
		state := r.State
		if r.OperatorBusy {
			state += "*"
		}
		last := "-"
		if r.LastTrigger != nil {
			last = r.LastTrigger.TriggerID + " (" + ago(r.LastTrigger.UpdatedAt, now) + ")"
		}
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s", r.WorkspaceID, r.Role, orDash(r.PaneID), r.Agent,
			state, r.Status, orDash(truncate(nudge.StripANSI(r.Summary), 40)), ago(r.StatusSince, now), r.QueueDepth,
			truncate(last, 40), lastReceipt(r.LastTrigger))
	})
	if err != nil {
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
		Long: "A full-screen live dashboard of every runtime, grouped by workspace: one snapshot, then\n" +
			"the event stream. Pages: the list, a runtime (its trigger timeline, readiness changes and\n" +
			"live screen) and a trigger (its stamps and audit story).\n" +
			"Keys: ↑↓ select, ⏎ open, / filter, o sort, a attach (switch your tmux client, else tmux\n" +
			"attach until you detach), p pause/resume, f force, r refresh, q/Esc back or quit.",
		Args: exactArgs(0, "no arguments"),
	}
	o := addClientFlags(cmd)
	t := addTmuxFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c := o.client(env)
		defer c.Close()
		return tui.Run(cmd.Context(), tui.Config{Client: c, Getenv: env.getenv, TmuxArgv: t.argv})
	}
	return cmd
}
