package main

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// What a caller may read. Events, audit records and receipt lookups are filtered by the
// caller's workspaces; something outside them is answered exactly as something that
// does not exist, so a scoped token cannot even learn that an id is in use elsewhere.

// sees reports whether c may read workspace ws. A record that belongs to no workspace
// (a daemon-wide alert, a refusal naming no runtime) is for unrestricted callers and
// tokens for all workspaces only.
func (c caller) sees(ws string) bool {
	if ws == "" {
		return c.Workspaces == nil && c.RuntimeID == ""
	}
	return c.allow(verbRead, ws) == nil
}

// seesEvent is the /v1/events filter.
func (c caller) seesEvent(ev Event) bool { return c.sees(ev.Workspace) }

// seesAudit is the /v1/audit filter. A record without a workspace belongs to the
// workspace of the runtime or trigger it names (triggerWS looks a trigger up; it
// returns "" for an unknown one).
func (c caller) seesAudit(rec store.AuditRecord, triggerWS func(string) string) bool {
	return c.sees(auditWorkspace(rec, triggerWS))
}

func auditWorkspace(rec store.AuditRecord, triggerWS func(string) string) string {
	switch {
	case rec.Workspace != "":
		return rec.Workspace
	case rec.RuntimeID != "":
		return workspaceOfRuntime(rec.RuntimeID)
	case rec.TriggerID != "" && triggerWS != nil:
		return triggerWS(rec.TriggerID)
	}
	return ""
}

// workspaceOfRuntime is the workspace in a runtime id (rt_<ws>.<role>; a workspace name
// holds no dot), or "".
func workspaceOfRuntime(id string) string {
	rest, ok := strings.CutPrefix(id, "rt_")
	if !ok {
		return ""
	}
	ws, _, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	return ws
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
func (d *daemon) readableTrigger(c caller, id string) (store.Trigger, error) {
	t, err := d.pipe.Get(id)
	if err != nil {
		return t, err
	}
	if !c.sees(t.WorkspaceID) {
		return store.Trigger{}, unknownTrigger(id)
	}
	return t, nil
}

// serveScopedEvents is /v1/events for c.
func (d *daemon) serveScopedEvents(w http.ResponseWriter, r *http.Request, c caller) {
	if err := d.hub.Serve(w, r, c.seesEvent); err != nil {
		writeError(w, err)
	}
}

// eventWorkspace is the workspace of the runtime an event is about ("" if unknown).
func (d *daemon) eventWorkspace(runtimeID string) string {
	if rt, ok := d.reg.Get(runtimeID); ok {
		return rt.WorkspaceID
	}
	return workspaceOfRuntime(runtimeID)
}
