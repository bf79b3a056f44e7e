package main

import (
	"net/http"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
)

// serveScopedEvents is /v1/events for the caller the server put in the request's
// context: the events of the workspaces it may read.
func (d *daemon) serveScopedEvents(w http.ResponseWriter, r *http.Request) {
	c, ok := auth.CallerFrom(r.Context())
	if !ok {
		writeError(w, nudge.NewError(nudge.Forbidden, "unauthenticated"))
		return
	}
	d.hub.serveEvents(w, r, func(ev Event) bool { return c.Sees(ev.Workspace) })
}

// eventWorkspace is the workspace of the runtime an event is about ("" if unknown).
func (d *daemon) eventWorkspace(runtimeID string) string {
	if rt, ok := d.reg.Get(runtimeID); ok {
		return rt.WorkspaceID
	}
	return auth.WorkspaceOfRuntime(runtimeID)
}
