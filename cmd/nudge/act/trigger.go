package act

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

// TriggerCommand is `nudge trigger`.
func TriggerCommand(cli CLI) *cobra.Command {
	var req api.TriggerRequest
	var ackTimeout, waitFor time.Duration
	var wait bool
	cmd := &cobra.Command{
		Use:   "trigger --workspace WS --agent ROLE [flags] PROMPT|-",
		Short: "deliver a prompt to a live agent",
		Long: "Deliver PROMPT (- reads it from stdin) to the agent ROLE of workspace WS and print its receipt\n" +
			"(a line on a terminal, the JSON receipt in a pipe or a file, or as -o says).\n" +
			"Exits 1 if the trigger failed (the receipt on stdout says why), 3 if --wait ended before\n" +
			"the trigger was closed, or --wait-for before it reached that state (the receipt so far is on stdout).",
		Example: "  nudge trigger --workspace mobile_core --agent reviewer --thread th_42 \"Review th_42.\" --wait\n" +
			"  git diff | nudge trigger --workspace mobile_core --agent reviewer -",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cli.Usage("want one PROMPT (or - for stdin), got %d argument(s)", len(args))
			}
			return nil
		},
	}
	client := cli.WithClient(cmd)
	out := AddOutputFlags(cmd, cli.Stdout, cli.Usage)
	fs := cmd.Flags()
	fs.StringVar(&req.Workspace, "workspace", "", "workspace id")
	fs.StringVar(&req.Agent, "agent", "", "the agent's role")
	fs.StringVar(&req.TriggerID, "id", "", "trigger id (idempotency key; default: generated)")
	fs.StringVar(&req.ThreadID, "thread", "", "thread id")
	fs.BoolVar(&req.ForceOverride, "force", false, "inject even if a human is at the pane (needs --reason)")
	fs.StringVar(&req.Reason, "reason", "", "why (required with --force)")
	fs.StringVar(&req.OverrideIntent, "intent", "", "with --force: human_override or coordinator_override")
	fs.DurationVar(&ackTimeout, "ack-timeout", 0, "ack timeout for this trigger (default: the daemon's)")
	fs.BoolVar(&wait, "wait", false, "wait for the final receipt")
	fs.DurationVar(&waitFor, "wait-timeout", 2*time.Minute, "with --wait or --wait-for: give up after this long")
	until := fs.String("wait-for", "", "wait until the receipt is submitted, acked, closed, or has the agent's reply (reply)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		asJSON, err := out.AsJSON()
		if err != nil {
			return err
		}
		if req.Workspace == "" || req.Agent == "" {
			return cli.Usage("want --workspace, --agent and one PROMPT (or - for stdin)")
		}
		if w := api.WaitFor(*until); w != "" && !w.Known() {
			return cli.Usage("--wait-for %q: want submitted, acked, closed or reply", w)
		}
		req.Prompt = args[0]
		if req.Prompt == "-" {
			b, err := io.ReadAll(io.LimitReader(cli.Stdin, 16<<20))
			if err != nil {
				return fmt.Errorf("read prompt: %w", err)
			}
			req.Prompt = string(b)
		}
		req.AckTimeoutMS = ackTimeout.Milliseconds()
		c := client()
		defer c.Close()
		if err := CheckTarget(cmd.Context(), c, req.Workspace, req.Agent); err != nil {
			return err
		}
		t, err := c.Trigger(cmd.Context(), req)
		if err != nil {
			return err
		}
		if *until != "" {
			return cli.WaitReceipt(cmd.Context(), c, ReceiptPrinter(asJSON, true), t.TriggerID, api.WaitFor(*until), waitFor, false)
		}
		if wait && !t.Closed {
			if t, err = c.GetTrigger(cmd.Context(), t.TriggerID, waitFor); err != nil {
				return err
			}
		}
		return cli.PrintReceiptExit(ReceiptPrinter(asJSON, true), t, wait)
	}
	return cmd
}

// PrintReceiptExit prints a receipt and says how the command exits: 1 for a failed
// trigger; 3 (cli.Pending) for one still open when the wait asked for (waited) ended.
func (cli CLI) PrintReceiptExit(print func(io.Writer, api.Trigger) error, t api.Trigger, waited bool) error {
	if err := print(cli.Stdout, t); err != nil {
		return err
	}
	if t.State == nudge.StateFailed {
		return fmt.Errorf("trigger %s failed: %s %s", t.TriggerID, t.ErrorCode, t.Message)
	}
	if waited && !t.Closed {
		return cli.Pending(fmt.Sprintf("trigger %s is still %s: the wait ended first (nudge receipt %s --wait DURATION waits again)", t.TriggerID, t.State, t.TriggerID))
	}
	return nil
}

// WaitReceipt waits up to d until trigger id's receipt reaches w, prints it (replyOnly:
// the reply's text alone) and exits 0, 1 (failed) or 3 (not reached in time).
func (cli CLI) WaitReceipt(ctx context.Context, c *api.Client, print func(io.Writer, api.Trigger) error, id string, w api.WaitFor, d time.Duration, replyOnly bool) error {
	t, reached, err := c.WaitTrigger(ctx, id, w, max(d, time.Millisecond), nil)
	switch {
	case err != nil:
		return err
	case replyOnly && reached:
		_, err = fmt.Fprintln(cli.Stdout, tui.PrintableText(t.Reply)) // a model wrote it: it must not drive the terminal
	case !replyOnly:
		err = print(cli.Stdout, t)
	}
	if err == nil && !reached {
		if t.State == nudge.StateFailed {
			return fmt.Errorf("trigger %s failed: %s %s", t.TriggerID, t.ErrorCode, t.Message)
		}
		again := "--wait DURATION"
		if w == api.WaitReply {
			again = "--reply " + again
		}
		return cli.Pending(fmt.Sprintf("trigger %s is %s, not %s yet (nudge receipt %s %s waits again)", id, t.State, w, id, again))
	}
	return err
}
