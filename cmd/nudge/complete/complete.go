// Package complete is the shell completion of nudge's flag values and arguments beyond
// cobra's own (commands and flag names): runtime ids, trigger ids, workspaces and roles
// asked of the daemon (for at most completionTimeout), profile names from the profiles
// the binary embeds and the user's overrides, -o's formats.
package complete

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

// Client is the client of the daemon a command's flags (or NUDGE_<FLAG>) name; the
// caller closes it.
type Client func(cmd *cobra.Command) *api.Client

// askDaemon returns a completion func that lists what list finds on the daemon client
// names; nothing when there is no daemon.
func askDaemon(client Client, list func(context.Context, *cobra.Command, *api.Client) ([]cobra.Completion, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		c := client(cmd)
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

// FirstArg completes the first argument with fn and nothing after it.
func FirstArg(fn cobra.CompletionFunc) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return fn(cmd, args, toComplete)
	}
}

// Runtimes lists runtime ids (of --workspace, if given) with their state.
func Runtimes(client Client) cobra.CompletionFunc {
	return askDaemon(client, func(ctx context.Context, cmd *cobra.Command, c *api.Client) ([]cobra.Completion, error) {
		ws, _ := cmd.Flags().GetString("workspace")
		rts, err := c.Runtimes(ctx, ws)
		var out []cobra.Completion
		for _, rt := range rts {
			out = append(out, cobra.CompletionWithDesc(rt.RuntimeID, string(rt.Status)+" "+string(rt.Readiness)))
		}
		return out, err
	})
}

// Workspaces lists the workspaces that have runtimes.
func Workspaces(client Client) cobra.CompletionFunc {
	return askDaemon(client, func(ctx context.Context, _ *cobra.Command, c *api.Client) ([]cobra.Completion, error) {
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

// Roles lists the roles of --workspace (all workspaces' without it).
func Roles(client Client) cobra.CompletionFunc {
	return askDaemon(client, func(ctx context.Context, cmd *cobra.Command, c *api.Client) ([]cobra.Completion, error) {
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

// Triggers lists the newest trigger ids with their state.
func Triggers(client Client) cobra.CompletionFunc {
	return askDaemon(client, func(ctx context.Context, _ *cobra.Command, c *api.Client) ([]cobra.Completion, error) {
		ts, err := c.Triggers(ctx, api.TriggerFilter{Newest: true, Limit: 50})
		var out []cobra.Completion
		for _, t := range ts {
			out = append(out, cobra.CompletionWithDesc(t.TriggerID, string(t.State)+" "+t.WorkspaceID+"/"+t.Agent))
		}
		return out, err
	})
}

// Profiles lists the agent profiles: the embedded ones and the overrides in dir.
func Profiles(dir string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return profiles(dir), cobra.ShellCompDirectiveNoFileComp
	}
}

func profiles(dir string) []cobra.Completion {
	profs, err := panes.LoadProfiles(dir)
	if err != nil {
		profs, _ = panes.LoadProfiles("")
	}
	var out []cobra.Completion
	for name := range profs {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Register registers the value completions of the flags every command shares, by flag
// name, on c and its subcommands once the tree is built; profileDir holds the user's
// profile overrides.
func Register(c *cobra.Command, client Client, profileDir string) {
	reg := func(flag string, fn cobra.CompletionFunc) {
		if c.Flags().Lookup(flag) != nil {
			c.RegisterFlagCompletionFunc(flag, fn) //nolint:errcheck // the flag exists
		}
	}
	if c.Flags().Lookup("token") != nil { // a client of the daemon
		reg("workspace", Workspaces(client))
		reg("runtime", Runtimes(client))
		reg("trigger", Triggers(client))
		if c.Name() == "spawn" || c.Name() == "register" {
			reg("agent", Profiles(profileDir))
		} else {
			reg("agent", Roles(client))
		}
	}
	reg("output", cobra.FixedCompletions([]cobra.Completion{"json", "table"}, cobra.ShellCompDirectiveNoFileComp))
	for _, sub := range c.Commands() {
		Register(sub, client, profileDir)
	}
}
