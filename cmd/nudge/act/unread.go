package act

import (
	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
)

// UnreadCommand is `nudge unread`: it reports a thread's newest message for an agent, for the unread wake policy
// (docs/wake.md).
func UnreadCommand(cli CLI) *cobra.Command {
	var b api.ThreadHeadRequest
	cmd := &cobra.Command{
		Use:   "unread THREAD_ID HEAD --workspace WS --agent ROLE",
		Short: "report a thread's newest message for an agent (the unread wake policy)",
		Long: "Report that THREAD_ID's newest message for the agent is HEAD. Until the agent's read cursor " +
			"(its heartbeats' --cursor) equals HEAD, the thread is unread, and `nudge serve --wake-unread D` " +
			"prompts the agent once it has lagged for D.",
		Example: "  nudge unread thr-7 msg-42 --workspace api --agent reviewer",
		Args:    cli.Args(2, "THREAD_ID and HEAD"),
	}
	client := cli.WithClient(cmd)
	asJSONf := cli.Output(cmd, "json")
	fs := cmd.Flags()
	fs.StringVar(&b.Workspace, "workspace", "", "workspace id")
	fs.StringVar(&b.Agent, "agent", "", "the agent's role (or agent_id)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if b.Workspace == "" || b.Agent == "" {
			return cli.Usage("want --workspace and --agent")
		}
		asJSON, err := asJSONf()
		if err != nil {
			return err
		}
		c := client()
		defer c.Close()
		b.Head = args[1]
		h, err := c.ThreadHead(cmd.Context(), args[0], b)
		if err != nil {
			return err
		}
		return tui.PrintRecord(cli.Stdout, asJSON, h)
	}
	return cmd
}
