package cli

// Shell completion (package complete), asking the daemon the command's flags name.

import (
	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/complete"
	"github.com/nudgehq/nudge/cmd/nudge/paths"
)

// asker is the client of the daemon a command's flags (or NUDGE_<FLAG>) name.
func asker(env *cliEnv) complete.Client {
	return func(cmd *cobra.Command) *api.Client {
		envFallback(cmd, env) //nolint:errcheck // a bad NUDGE_* is reported when the command runs
		get := func(name string) string { v, _ := cmd.Flags().GetString(name); return v }
		return (&clientOpts{socket: get("socket"), stateDir: get("state-dir"), token: get("token")}).client(env)
	}
}

var firstArg = complete.FirstArg

func completeRuntimes(env *cliEnv) cobra.CompletionFunc   { return complete.Runtimes(asker(env)) }
func completeWorkspaces(env *cliEnv) cobra.CompletionFunc { return complete.Workspaces(asker(env)) }
func completeTriggers(env *cliEnv) cobra.CompletionFunc   { return complete.Triggers(asker(env)) }

// addCompletions registers the flag value completions on the whole tree.
func addCompletions(root *cobra.Command, env *cliEnv) {
	dir, _ := paths.OverrideDirs()
	complete.Register(root, asker(env), dir)
}
