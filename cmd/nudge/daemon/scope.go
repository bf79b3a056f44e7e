package daemon

import (
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/panes"
)

// eventWorkspace is the workspace of the runtime an event is about ("" if unknown).
func eventWorkspace(reg panes.Reader, runtimeID string) string {
	if rt, ok := reg.Get(runtimeID); ok {
		return rt.WorkspaceID
	}
	return auth.WorkspaceOfRuntime(runtimeID)
}
