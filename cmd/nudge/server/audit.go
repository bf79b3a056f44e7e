package server

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/store"
)

func (a auditAPI) handleAudit(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	s.deps.Store.Flush() // write-behind records first
	q := r.URL.Query()
	if q.Get("verify") == "1" || q.Get("verify") == "true" {
		writeJSON(w, http.StatusOK, s.verifyAudit(q.Get("archive") == "1" || q.Get("archive") == "true"))
		return
	}
	f := store.AuditFilter{TriggerID: q.Get("trigger"), RuntimeID: q.Get("runtime"), ThreadID: q.Get("thread"),
		Workspace: q.Get("workspace"), Event: q.Get("event"), Host: q.Get("host")}
	if f.Host != "" && !c.Unrestricted() {
		s.fail(w, r, nudge.NewError(nudge.Forbidden, "another host's audit records: for an unrestricted caller only"))
		return
	}
	var err error
	if f.Since, err = parseTimeParam(q.Get("since")); err == nil {
		f.Until, err = parseTimeParam(q.Get("until"))
	}
	if err != nil {
		s.fail(w, r, badRequest("since/until: %v", err))
		return
	}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		f.Limit, f.Newest = n, q.Get("newest") == "1"
	}
	recs, err := s.deps.Store.Audit(f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := []nudge.AuditRecord{}
	triggerWS := map[string]string{}
	lookup := func(id string) string {
		ws, ok := triggerWS[id]
		if !ok {
			t, err := s.deps.Store.GetTrigger(id)
			var aged *store.AgedOutError
			switch {
			case err == nil:
				ws = t.WorkspaceID
			case errors.As(err, &aged): // the trigger aged out; its tombstone keeps the workspace
				ws = aged.Workspace
			}
			triggerWS[id] = ws
		}
		return ws
	}
	for _, rec := range recs {
		if c.Sees(auditWorkspace(rec, lookup)) {
			out = append(out, rec)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// parseTimeParam accepts RFC 3339 or a Go duration meaning "that long ago".
func parseTimeParam(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	return time.Parse(time.RFC3339, s)
}

// auditCall records an API call with the caller's identity.
func (s *Server) auditCall(r *http.Request, c auth.Caller, event, runtimeID, workspace, reason string) {
	uid := c.UID
	rec := nudge.AuditRecord{Event: event, RuntimeID: runtimeID, Workspace: workspace, Subject: c.Subject, PeerUID: &uid, Reason: reason}
	if _, err := s.deps.Store.AppendAudit(rec); err != nil {
		s.log.Error("audit", "event", event, "err", err)
	}
}

func (a auditAPI) handleListSchedules(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	all, err := s.deps.Store.ListSchedules()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := []nudge.Schedule{}
	for _, sc := range all {
		if c.Allow(auth.VerbRead, sc.WorkspaceID) == nil {
			out = append(out, sc)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (a auditAPI) handleAddSchedule(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	var b api.ScheduleRequest
	if err := s.decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := c.Allow(auth.VerbTrigger, b.Workspace); err != nil {
		s.fail(w, r, err)
		return
	}
	every, err := time.ParseDuration(b.Every)
	if err != nil {
		s.fail(w, r, badRequest("every: %v", err))
		return
	}
	sc, err := s.deps.Schedules.Add(b.Workspace, b.Agent, b.Prompt, every)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.auditCall(r, c, "api_schedule_add", "", sc.WorkspaceID, sc.ScheduleID)
	writeJSON(w, http.StatusCreated, sc)
}

func (a auditAPI) handleDeleteSchedule(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	id := r.PathValue("id")
	all, err := s.deps.Store.ListSchedules()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, sc := range all {
		if sc.ScheduleID != id || !c.Sees(sc.WorkspaceID) {
			continue // another workspace's is unknown, as everywhere
		}
		if err := c.Allow(auth.VerbTrigger, sc.WorkspaceID); err != nil {
			s.fail(w, r, err)
			return
		}
		if err := s.deps.Schedules.Remove(id); err != nil {
			s.fail(w, r, err)
			return
		}
		s.auditCall(r, c, "api_schedule_remove", "", sc.WorkspaceID, id)
		writeJSON(w, http.StatusOK, api.ScheduleRemoved{Removed: true, ScheduleID: id})
		return
	}
	s.fail(w, r, &api.Error{ErrorCode: nudge.NotFound, Message: "no schedule " + id})
}

// auditRefusal records a refused mutating call (reads are not audited): who was refused,
// from which uid, and why.
func (s *Server) auditRefusal(r *http.Request, c auth.Caller, err error) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return
	}
	ae := ToAPIError(err)
	uid := c.UID
	rec := nudge.AuditRecord{Event: "api_refused", Subject: c.Subject, PeerUID: &uid, Code: ae.ErrorCode,
		Reason: r.Method + " " + r.URL.EscapedPath() + ": " + ae.Message}
	if _, err := s.deps.Store.AppendAudit(rec); err != nil {
		s.log.Error("audit", "event", rec.Event, "err", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

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

// archivedAudit is the store's side of a trimmed audit log (store.DB): where the kept
// log starts, and the check of the sealed segments before it.
type archivedAudit interface {
	VerifyKept() (n int, base uint64, err error)
	VerifyAuditArchive() (int, error)
}

// verifyAudit checks the kept audit log from its first kept record on and, with
// archive, the sealed segments before it.
func (s *Server) verifyAudit(archive bool) api.AuditVerified {
	aa, sealed := s.deps.Store.(archivedAudit)
	var res api.AuditVerified
	var err error
	if sealed {
		res.Records, res.ArchivedThrough, err = aa.VerifyKept()
	} else {
		res.Records, err = s.deps.Store.VerifyAudit()
	}
	if sealed && archive && err == nil {
		// Sealed after the check above? Then the archive reaches past its base: still
		// joined, as VerifyArchive accepts an archive that ends at or past the base.
		res.Archived, err = aa.VerifyAuditArchive()
	}
	res.OK = err == nil
	if err != nil {
		res.Error = err.Error()
	}
	return res
}
