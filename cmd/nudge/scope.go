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
	if err := d.hub.Serve(w, r, func(ev Event) bool { return c.Sees(ev.Workspace) }); err != nil {
		writeError(w, err) // a bad or expired since (410 EVENTS_EXPIRED), before any event
	}
}

// eventWorkspace is the workspace of the runtime an event is about ("" if unknown).
func (d *daemon) eventWorkspace(runtimeID string) string {
	if rt, ok := d.reg.Get(runtimeID); ok {
		return rt.WorkspaceID
	}
	return auth.WorkspaceOfRuntime(runtimeID)
}
