package main

import (
	"fmt"
	"net/http"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/store"
)

// What a caller may read. Events, audit records and receipt lookups are filtered by the
// caller's workspaces; something outside them is answered exactly as something that
// does not exist, so a scoped token cannot even learn that an id is in use elsewhere.

// auditWorkspace is the workspace an audit record belongs to, for the /v1/audit filter.
// A record without a workspace belongs to the workspace of the runtime or trigger it
// names (triggerWS looks a trigger up; it returns "" for an unknown one).
func auditWorkspace(rec nudge.AuditRecord, triggerWS func(string) string) string {
	switch {
	case rec.Workspace != "":
		return rec.Workspace
	case rec.RuntimeID != "":
		return auth.WorkspaceOfRuntime(rec.RuntimeID)
	case rec.TriggerID != "" && triggerWS != nil:
		return triggerWS(rec.TriggerID)
	}
	return ""
}

// unknownTrigger is the answer for a trigger id that does not exist — and for one the
// caller may not read: the same status and body.
func unknownTrigger(id string) error {
	return fmt.Errorf("get trigger %s: %w", id, store.ErrNotFound)
}

// unknownRuntime is the same for runtimes.
func unknownRuntime(id string) error {
	return &apiError{nudge.NotFound, "no runtime " + id}
}

// readableTrigger looks a trigger up for c: one outside c's workspaces is unknown.
func (d *daemon) readableTrigger(c caller, id string) (nudge.Trigger, error) {
	t, err := d.pipe.Get(id)
	if err != nil {
		return t, err
	}
	if !c.Sees(t.WorkspaceID) {
		return nudge.Trigger{}, unknownTrigger(id)
	}
	return t, nil
}

// serveScopedEvents is /v1/events for c.
func (d *daemon) serveScopedEvents(w http.ResponseWriter, r *http.Request, c caller) {
	if err := d.hub.Serve(w, r, func(ev Event) bool { return c.Sees(ev.Workspace) }); err != nil {
		writeError(w, err)
	}
}

// eventWorkspace is the workspace of the runtime an event is about ("" if unknown).
func (d *daemon) eventWorkspace(runtimeID string) string {
	if rt, ok := d.reg.Get(runtimeID); ok {
		return rt.WorkspaceID
	}
	return auth.WorkspaceOfRuntime(runtimeID)
}
