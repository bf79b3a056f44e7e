package main

// Shell completion of flag values and arguments beyond cobra's own (commands and flag
// names): runtime ids, trigger ids and workspaces asked of the daemon, profile names from
// the profiles this binary embeds (and the user's overrides), -o's formats.

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/panes"
)

// completionTimeout bounds a question to the daemon while the user waits at a prompt.
const completionTimeout = 2 * time.Second

// askDaemon returns a completion func that lists what list finds on the daemon the
// command's flags (or NUDGE_<FLAG>) name; nothing when there is no daemon.
func askDaemon(env *cliEnv, list func(context.Context, *cobra.Command, *api.Client) ([]cobra.Completion, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		envFallback(cmd, env) //nolint:errcheck // a bad NUDGE_* is reported when the command runs
		get := func(name string) string { v, _ := cmd.Flags().GetString(name); return v }
		c := (&clientOpts{socket: get("socket"), stateDir: get("state-dir"), token: get("token")}).client(env)
		defer c.Close()
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		all, err := list(ctx, cmd, c)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
		}
		out := all[:0]
		for _, s := range all {
			if strings.HasPrefix(s, toComplete) {
				out = append(out, s)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// firstArg completes the first argument with fn and nothing after it.
func firstArg(fn cobra.CompletionFunc) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return fn(cmd, args, toComplete)
	}
}

// completeRuntimes lists runtime ids (of --workspace, if given) with their state.
func completeRuntimes(env *cliEnv) cobra.CompletionFunc {
	return askDaemon(env, func(ctx context.Context, cmd *cobra.Command, c *api.Client) ([]cobra.Completion, error) {
		ws, _ := cmd.Flags().GetString("workspace")
		rts, err := c.Runtimes(ctx, ws)
		var out []cobra.Completion
		for _, rt := range rts {
			out = append(out, cobra.CompletionWithDesc(rt.RuntimeID, string(rt.Status)+" "+string(rt.Readiness)))
		}
		return out, err
	})
}

// completeWorkspaces lists the workspaces that have runtimes.
func completeWorkspaces(env *cliEnv) cobra.CompletionFunc {
	return askDaemon(env, func(ctx context.Context, _ *cobra.Command, c *api.Client) ([]cobra.Completion, error) {
		rts, err := c.Runtimes(ctx, "")
		var out []cobra.Completion
		for _, rt := range rts {
			if !slices.Contains(out, rt.WorkspaceID) {
				out = append(out, rt.WorkspaceID)
			}
		}
		return out, err
	})
}

// completeRoles lists the roles of --workspace (all workspaces' without it).
func completeRoles(env *cliEnv) cobra.CompletionFunc {
	return askDaemon(env, func(ctx context.Context, cmd *cobra.Command, c *api.Client) ([]cobra.Completion, error) {
		ws, _ := cmd.Flags().GetString("workspace")
		rts, err := c.Runtimes(ctx, ws)
		var out []cobra.Completion
		for _, rt := range rts {
			if !slices.Contains(out, rt.Role) {
				out = append(out, rt.Role)
			}
		}
		return out, err
	})
}

// completeTriggers lists the newest trigger ids with their state.
func completeTriggers(env *cliEnv) cobra.CompletionFunc {
	return askDaemon(env, func(ctx context.Context, _ *cobra.Command, c *api.Client) ([]cobra.Completion, error) {
		ts, err := c.Triggers(ctx, api.TriggerFilter{Newest: true, Limit: 50})
		var out []cobra.Completion
		for _, t := range ts {
			out = append(out, cobra.CompletionWithDesc(t.TriggerID, string(t.State)+" "+t.WorkspaceID+"/"+t.Agent))
		}
		return out, err
	})
}

// completeProfiles lists the agent profiles: the embedded ones and the user's overrides.
func completeProfiles(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	dir, _ := defaultOverrideDirs()
	profs, err := panes.LoadProfiles(dir)
	if err != nil {
		profs, _ = panes.LoadProfiles("")
	}
	var out []cobra.Completion
	for name := range profs {
		out = append(out, name)
	}
	slices.Sort(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// addCompletions registers the value completions of the flags every command shares, by
// flag name, once the tree is built.
func addCompletions(c *cobra.Command, env *cliEnv) {
	reg := func(flag string, fn cobra.CompletionFunc) {
		if c.Flags().Lookup(flag) != nil {
			c.RegisterFlagCompletionFunc(flag, fn) //nolint:errcheck // the flag exists
		}
	}
	if c.Flags().Lookup("token") != nil { // a client of the daemon
		reg("workspace", completeWorkspaces(env))
		reg("runtime", completeRuntimes(env))
		reg("trigger", completeTriggers(env))
		if c.Name() == "spawn" || c.Name() == "register" {
			reg("agent", completeProfiles)
		} else {
			reg("agent", completeRoles(env))
		}
	}
	reg("output", cobra.FixedCompletions([]cobra.Completion{"json", "table"}, cobra.ShellCompDirectiveNoFileComp))
	for _, sub := range c.Commands() {
		addCompletions(sub, env)
	}
}
