package cli

// Commands on triggers and their story: trigger, receipt, ack, force, unblock, audit.

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/act"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
)

func receiptCmd(env *cliEnv) *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "receipt TRIGGER_ID [--wait DURATION] [--reply]",
		Short: "show a trigger's receipt",
		Long: "Print a trigger's receipt. Exits 1 if the trigger failed, 3 if --wait ended before the\n" +
			"trigger was closed (the receipt so far is printed) or, with --reply, before the reply came, else 0.",
		Example: "  nudge receipt job-42 --wait 30s",
		Args:    exactArgs(1, "one TRIGGER_ID"),

		ValidArgsFunction: firstArg(completeTriggers(env)),
	}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "json")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the final receipt (with --reply: for the reply)")
	reply := cmd.Flags().Bool("reply", false, "print the agent's reply alone (exit 3 while it has none)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		c := o.client(env)
		defer c.Close()
		if *reply {
			return actCLI(env).WaitReceipt(cmd.Context(), c, act.ReceiptPrinter(asJSON, false), args[0], api.WaitReply, wait, true)
		}
		t, err := c.GetTrigger(cmd.Context(), args[0], wait)
		if err != nil {
			return err
		}
		return actCLI(env).PrintReceiptExit(act.ReceiptPrinter(asJSON, false), t, wait > 0)
	}
	return cmd
}

func ackCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{Use: "ack TRIGGER_ID", Short: "acknowledge a trigger", Args: exactArgs(1, "one TRIGGER_ID"),
		ValidArgsFunction: firstArg(completeTriggers(env))}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "json")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		c := o.client(env)
		defer c.Close()
		t, err := c.Ack(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return printTriggers(env.stdout, asJSON, t)
	}
	return cmd
}

func forceCmd(env *cliEnv) *cobra.Command {
	var b api.ForceRequest
	cmd := &cobra.Command{
		Use:   "force TRIGGER_ID --reason TEXT",
		Short: "force-deliver a held trigger now (needs --reason)",
		Args:  exactArgs(1, "one TRIGGER_ID and --reason"),

		ValidArgsFunction: firstArg(completeTriggers(env)),
	}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "json")
	cmd.Flags().StringVar(&b.Reason, "reason", "", "why the trigger must go now (required; kept in the audit log)")
	cmd.Flags().StringVar(&b.Intent, "intent", "human_override", "human_override or coordinator_override")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		if b.Reason == "" {
			return usagef("want one TRIGGER_ID and --reason")
		}
		c := o.client(env)
		defer c.Close()
		t, err := c.Force(cmd.Context(), args[0], b)
		if err != nil {
			return err
		}
		return printTriggers(env.stdout, asJSON, t)
	}
	return cmd
}

func unblockCmd(env *cliEnv) *cobra.Command {
	var b api.UnblockRequest
	cmd := &cobra.Command{
		Use:   "unblock THREAD_ID [--workspace WS --agent ROLE] [--reason TEXT]",
		Short: "lift a loop-guard block of a thread",
		Args:  exactArgs(1, "one THREAD_ID"),
	}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "json")
	fs := cmd.Flags()
	fs.StringVar(&b.Workspace, "workspace", "", "workspace id (with --agent; default: every agent's block of the thread)")
	fs.StringVar(&b.Agent, "agent", "", "the agent's role (with --workspace)")
	fs.StringVar(&b.Reason, "reason", "", "why the thread may go on (kept in the audit log)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if (b.Workspace == "") != (b.Agent == "") {
			return usagef("want one THREAD_ID, and --workspace with --agent or neither")
		}
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		c := o.client(env)
		defer c.Close()
		u, err := c.Unblock(cmd.Context(), args[0], b)
		if err != nil {
			return err
		}
		return tui.PrintRecord(env.stdout, asJSON, u)
	}
	return cmd
}

func auditCmd(env *cliEnv) *cobra.Command {
	var f api.AuditFilter
	var verify bool
	cmd := &cobra.Command{
		Use:     "audit [--trigger ID | --runtime ID | --thread ID | --workspace WS] [--since T] [--until T] | --verify",
		Short:   "show or verify the audit log",
		Example: "  nudge audit --trigger job-42\n  nudge audit --runtime rt_mobile_core.reviewer --since 1h -o json\n  nudge audit --verify",
		Args:    exactArgs(0, "no arguments"),
	}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "table")
	fs := cmd.Flags()
	fs.StringVar(&f.TriggerID, "trigger", "", "only this trigger")
	fs.StringVar(&f.RuntimeID, "runtime", "", "only this runtime")
	fs.StringVar(&f.ThreadID, "thread", "", "only this thread")
	fs.StringVar(&f.Workspace, "workspace", "", "only this workspace")
	fs.StringVar(&f.Host, "host", "", "another fleet host's records, as the hub keeps them (on the hub's daemon; docs/hub.md)")
	fs.StringVar(&f.Since, "since", "", "from (RFC 3339 or a duration ago, e.g. 1h)")
	fs.StringVar(&f.Until, "until", "", "to (RFC 3339 or a duration ago)")
	fs.BoolVar(&verify, "verify", false, "verify the hash chain of the log the store keeps (from its first kept record on: older ones are sealed into the audit archive by --retain)")
	archive := fs.Bool("archive", false, "with --verify: also verify the sealed segments in the daemon's --audit-archive and that they join the kept log")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		c := o.client(env)
		defer c.Close()
		if verify {
			res, err := c.VerifyAudit(cmd.Context(), *archive)
			if err != nil {
				return err
			}
			return tui.PrintAuditVerified(env.stdout, res, *archive)
		}
		recs, err := c.AuditLog(cmd.Context(), f)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(env.stdout, recs)
		}
		fmt.Fprintln(env.stdout, tui.AuditHeader)
		for _, r := range recs {
			printAudit(env.stdout, r)
		}
		return nil
	}
	return cmd
}
