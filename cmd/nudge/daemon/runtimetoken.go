package daemon

// The daemon's side of runtime tokens is auth.Authority's (minting, renewal, revocation);
// here is the registry as its renewal loop sees it. The client's side is auth.RuntimeToken.

import (
	"context"

	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/panes"
)

// tokenRuntimes is the registry as the authority's renewal loop sees it (auth.Runtimes).
type tokenRuntimes struct{ reg *panes.Registry }

// LiveRuntimes lists the live managed runtimes.
func (t tokenRuntimes) LiveRuntimes() []auth.LiveRuntime {
	var out []auth.LiveRuntime
	for _, rt := range t.reg.List() {
		if rt.Managed && panes.Live(rt.Status) {
			out = append(out, auth.LiveRuntime{ID: rt.RuntimeID, Workspace: rt.WorkspaceID, Role: rt.Role})
		}
	}
	return out
}

// SetPaneOption sets (or unsets) a user option of a runtime's pane.
func (t tokenRuntimes) SetPaneOption(ctx context.Context, id, name, val string) error {
	return t.reg.SetPaneOption(ctx, id, name, val)
}

// SetSessionEnv sets (or unsets) a variable of a workspace session's environment.
func (t tokenRuntimes) SetSessionEnv(ctx context.Context, ws, name, val string) error {
	return t.reg.SetSessionEnv(ctx, ws, name, val)
}
