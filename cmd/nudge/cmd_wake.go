package main

import (
	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
)

// unreadCmd reports a thread's newest message for an agent, for the unread wake policy
// (docs/wake.md).
func unreadCmd(env *cliEnv) *cobra.Command {
	var b api.ThreadHeadRequest
	cmd := &cobra.Command{
		Use:   "unread THREAD_ID HEAD --workspace WS --agent ROLE",
		Short: "report a thread's newest message for an agent (the unread wake policy)",
		Long: "Report that THREAD_ID's newest message for the agent is HEAD. Until the agent's read cursor " +
			"(its heartbeats' --cursor) equals HEAD, the thread is unread, and `nudge serve --wake-unread D` " +
			"prompts the agent once it has lagged for D.",
		Example: "  nudge unread thr-7 msg-42 --workspace api --agent reviewer",
		Args:    exactArgs(2, "THREAD_ID and HEAD"),
	}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "json")
	fs := cmd.Flags()
	fs.StringVar(&b.Workspace, "workspace", "", "workspace id")
	fs.StringVar(&b.Agent, "agent", "", "the agent's role (or agent_id)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if b.Workspace == "" || b.Agent == "" {
			return usagef("want --workspace and --agent")
		}
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		c := o.client(env)
		defer c.Close()
		b.Head = args[1]
		h, err := c.ThreadHead(cmd.Context(), args[0], b)
		if err != nil {
			return err
		}
		return tui.PrintRecord(env.stdout, asJSON, h)
	}
	return cmd
}
