package main

import (
	"context"
	"fmt"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/nudgehq/nudge"
)

// runSchedule is `nudge schedule add|ls|rm`.
func runSchedule(ctx context.Context, env *cliEnv, args []string) error {
	if len(args) == 0 {
		return usagef("want a subcommand: add, ls or rm")
	}
	sub, args := args[0], args[1:]
	fs := newFlagSet("schedule", sub+" ...", env)
	o := addClientFlags(fs)
	switch sub {
	case "add":
		var b scheduleBody
		fs.StringVar(&b.Workspace, "workspace", "", "workspace id")
		fs.StringVar(&b.Agent, "agent", "", "the agent's role")
		fs.StringVar(&b.Every, "every", "10m", "period (Go duration)")
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		if fs.NArg() != 1 || b.Workspace == "" || b.Agent == "" {
			return usagef("schedule add --workspace WS --agent ROLE [--every 10m] PROMPT")
		}
		b.Prompt = fs.Arg(0)
		return o.call(ctx, env, "POST", "/v1/schedules", b)
	case "ls", "list":
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		var all []nudge.Schedule
		if err := o.client(env).do(ctx, "GET", "/v1/schedules", nil, &all); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SCHEDULE\tWORKSPACE\tAGENT\tEVERY\tNEXT\tPROMPT")
		for _, s := range all {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.40q\n", s.ScheduleID, s.WorkspaceID, s.Agent, s.Every, s.NextAt.Local().Format(time.TimeOnly), s.Prompt)
		}
		return tw.Flush()
	case "rm", "remove":
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usagef("schedule rm SCHEDULE_ID")
		}
		return o.call(ctx, env, "DELETE", "/v1/schedules/"+url.PathEscape(fs.Arg(0)), nil)
	default:
		return usagef("unknown schedule subcommand %q: want add, ls or rm", sub)
	}
}
