package act

import (
	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
)

// ScheduleCommand is `nudge schedule add|ls|rm`.
func ScheduleCommand(cli CLI) *cobra.Command {
	return cli.Group("schedule", "manage periodic prompts", scheduleAdd(cli), scheduleLs(cli), scheduleRm(cli))
}

func scheduleAdd(cli CLI) *cobra.Command {
	var b api.ScheduleRequest
	cmd := &cobra.Command{
		Use:     "add --workspace WS --agent ROLE [--every 10m] PROMPT",
		Short:   "add a periodic prompt",
		Example: "  nudge schedule add --workspace mobile_core --agent reviewer --every 30m \"Check the open PRs.\"",
		Args:    cli.Args(1, "one PROMPT"),
	}
	client := cli.WithClient(cmd)
	asJSONf := cli.Output(cmd, "json")
	cmd.Flags().StringVar(&b.Workspace, "workspace", "", "workspace id")
	cmd.Flags().StringVar(&b.Agent, "agent", "", "the agent's role")
	cmd.Flags().StringVar(&b.Every, "every", "10m", "period (Go duration)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		asJSON, err := asJSONf()
		if err != nil {
			return err
		}
		if b.Workspace == "" || b.Agent == "" {
			return cli.Usage("want --workspace, --agent and one PROMPT")
		}
		b.Prompt = args[0]
		c := client()
		defer c.Close()
		s, err := c.AddSchedule(cmd.Context(), b)
		if err != nil {
			return err
		}
		return tui.PrintSchedules(cli.Stdout, asJSON, s)
	}
	return cmd
}

func scheduleLs(cli CLI) *cobra.Command {
	cmd := &cobra.Command{Use: "ls", Aliases: []string{"list"}, Short: "list periodic prompts", Args: cli.Args(0, "no arguments")}
	client := cli.WithClient(cmd)
	asJSONf := cli.Output(cmd, "table")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := asJSONf()
		if err != nil {
			return err
		}
		c := client()
		defer c.Close()
		all, err := c.Schedules(cmd.Context())
		if err != nil {
			return err
		}
		if asJSON {
			return tui.PrintJSON(cli.Stdout, all)
		}
		return tui.PrintSchedules(cli.Stdout, false, all...)
	}
	return cmd
}

func scheduleRm(cli CLI) *cobra.Command {
	cmd := &cobra.Command{Use: "rm SCHEDULE_ID", Aliases: []string{"remove"}, Short: "remove a periodic prompt", Args: cli.Args(1, "one SCHEDULE_ID")}
	client := cli.WithClient(cmd)
	asJSONf := cli.Output(cmd, "json")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		asJSON, err := asJSONf()
		if err != nil {
			return err
		}
		c := client()
		defer c.Close()
		r, err := c.RemoveSchedule(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return tui.PrintRecord(cli.Stdout, asJSON, r)
	}
	return cmd
}
