package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/nudgehq/nudge"
)

// scheduleBody is POST /v1/schedules.
type scheduleBody struct {
	Workspace string `json:"workspace"`
	Agent     string `json:"agent"`
	Prompt    string `json:"prompt"`
	Every     string `json:"every"`
}

func (d *daemon) handleListSchedules(w http.ResponseWriter, r *http.Request, c caller) {
	all, err := d.db.ListSchedules()
	if err != nil {
		writeError(w, err)
		return
	}
	out := []nudge.Schedule{}
	for _, s := range all {
		if c.Allow(verbRead, s.WorkspaceID) == nil {
			out = append(out, s)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *daemon) handleAddSchedule(w http.ResponseWriter, r *http.Request, c caller) {
	var b scheduleBody
	if err := decodeJSON(w, r, &b); err != nil {
		writeError(w, err)
		return
	}
	if err := c.Allow(verbTrigger, b.Workspace); err != nil {
		writeError(w, err)
		return
	}
	every, err := time.ParseDuration(b.Every)
	if err != nil {
		writeError(w, badRequest("every: %v", err))
		return
	}
	s, err := d.sched.Add(b.Workspace, b.Agent, b.Prompt, every)
	if err != nil {
		writeError(w, err)
		return
	}
	d.auditCall(r, c, "api_schedule_add", "", s.WorkspaceID, s.ScheduleID)
	writeJSON(w, http.StatusCreated, s)
}

func (d *daemon) handleDeleteSchedule(w http.ResponseWriter, r *http.Request, c caller) {
	id := r.PathValue("id")
	all, err := d.db.ListSchedules()
	if err != nil {
		writeError(w, err)
		return
	}
	for _, s := range all {
		if s.ScheduleID != id {
			continue
		}
		if err := c.Allow(verbTrigger, s.WorkspaceID); err != nil {
			writeError(w, err)
			return
		}
		if err := d.sched.Remove(id); err != nil {
			writeError(w, err)
			return
		}
		d.auditCall(r, c, "api_schedule_remove", "", s.WorkspaceID, id)
		writeJSON(w, http.StatusOK, map[string]any{"schedule_id": id, "removed": true})
		return
	}
	writeError(w, &apiError{"NOT_FOUND", "no schedule " + id})
}

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
