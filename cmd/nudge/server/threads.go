package server

import (
	"net/http"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
)

// handleThreadHead is POST /v1/threads/{id}/head: the thread's newest message for an
// agent, for the unread wake policy. It takes what triggering the agent takes (the
// agent's workspace, the trigger verb): the wake prompt it may cause is a trigger.
func (a triggersAPI) handleThreadHead(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	var b api.ThreadHeadRequest
	if err := s.decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if b.Workspace == "" || b.Agent == "" {
		s.fail(w, r, badRequest("workspace and agent are required"))
		return
	}
	if s.deps.Heads == nil {
		s.fail(w, r, &api.Error{ErrorCode: nudge.Unavailable, Message: "no wake policies in this daemon"})
		return
	}
	if err := s.deps.Policy.CheckTrigger(c, b.Workspace, b.Agent); err != nil {
		s.fail(w, r, err)
		return
	}
	thread := r.PathValue("id")
	rt, err := s.deps.Heads.Head(b.Workspace, b.Agent, thread, b.Head)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	uid := c.UID
	if _, err := s.deps.Store.AppendAudit(nudge.AuditRecord{Event: "thread_head", ThreadID: thread, RuntimeID: rt.RuntimeID,
		Workspace: rt.WorkspaceID, Subject: c.Subject, PeerUID: &uid, Reason: "head " + b.Head}); err != nil {
		s.log.Error("audit", "event", "thread_head", "err", err)
	}
	writeJSON(w, http.StatusOK, api.ThreadHead{ThreadID: thread, RuntimeID: rt.RuntimeID, Head: b.Head,
		Cursor: rt.LastCursor, Unread: rt.LastCursor != b.Head})
}
