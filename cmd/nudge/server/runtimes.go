package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/panes"
)

func view(s *Server, rt nudge.Runtime) api.Runtime {
	return api.NewRuntime(rt, s.deps.Triggers.Depth(rt.RuntimeID))
}

// handleListRuntimes is GET /v1/runtimes: the fleet (the registry's runtimes). With
// ?all=1 the runtimes dropped from it (deregistered by hand, a window closed again, the
// runtime retention over) follow, as the store keeps them.
func (a runtimesAPI) handleListRuntimes(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	out := []api.Runtime{}
	ws := r.URL.Query().Get("workspace")
	show := func(rt nudge.Runtime) bool {
		return (ws == "" || rt.WorkspaceID == ws) && c.Allow(auth.VerbRead, rt.WorkspaceID) == nil
	}
	fleet := map[string]bool{}
	for _, rt := range s.deps.Runtimes.List() {
		fleet[rt.RuntimeID] = true
		if show(rt) {
			out = append(out, view(s, rt))
		}
	}
	if all, _ := strconv.ParseBool(r.URL.Query().Get("all")); all {
		s.deps.Store.Flush() // a runtime dropped a moment ago: its last record
		rts, err := s.deps.Store.ListRuntimes()
		if err != nil {
			s.fail(w, r, err)
			return
		}
		for _, rt := range rts {
			if !fleet[rt.RuntimeID] && show(rt) {
				out = append(out, api.Runtime{Runtime: rt})
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// handleUnmanaged is GET /v1/unmanaged: the panes in the workspaces' sessions that no
// runtime claims (windows opened there by hand), of the workspaces the caller may read.
func (a runtimesAPI) handleUnmanaged(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	out := []panes.Stray{}
	ws := r.URL.Query().Get("workspace")
	for _, p := range a.s.deps.Panes.Unmanaged() {
		if (ws == "" || p.WorkspaceID == ws) && c.Allow(auth.VerbRead, p.WorkspaceID) == nil {
			out = append(out, p)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func runtimeFor(s *Server, w http.ResponseWriter, r *http.Request, c auth.Caller, verb string) (nudge.Runtime, bool) {
	rt, ok := s.deps.Runtimes.Get(r.PathValue("id"))
	if !ok || !c.Sees(rt.WorkspaceID) {
		s.fail(w, r, unknownRuntimeOf(s, c, r.PathValue("id")))
		return nudge.Runtime{}, false
	}
	if err := c.AllowRuntime(verb, rt.RuntimeID, rt.WorkspaceID); err != nil {
		s.fail(w, r, err)
		return rt, false
	}
	return rt, true
}

func (a runtimesAPI) handleGetRuntime(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	if rt, ok := runtimeFor(s, w, r, c, auth.VerbRead); ok {
		writeJSON(w, http.StatusOK, view(s, rt))
	}
}

func (a runtimesAPI) handleSpawn(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	var b api.SpawnRequest
	if err := s.decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := b.Normalize(); err != nil {
		s.fail(w, r, err)
		return
	}
	host := b.Host
	if host == "" {
		host = s.deps.Runtimes.HostOf(b.Workspace)
	}
	sp := auth.Spawn{Workspace: b.Workspace, Agent: b.Agent, Dir: b.Dir, Argv: b.Argv, Host: host, PromptFile: b.PromptFile}
	if err := s.deps.Policy.CheckSpawn(c, &sp); err != nil {
		s.fail(w, r, err)
		return
	}
	b.Dir, b.PromptFile = sp.Dir, sp.PromptFile
	rt, err := s.deps.Runtimes.Spawn(r.Context(), panes.SpawnRequest{
		Workspace: b.Workspace, Role: b.Role, Agent: b.Agent, AgentID: b.AgentID, Dir: b.Dir,
		SessionID: b.SessionID, PromptFile: b.PromptFile, Argv: b.Argv, Host: b.Host,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.auditCall(r, c, "api_spawn", rt.RuntimeID, rt.WorkspaceID, "")
	writeJSON(w, http.StatusCreated, view(s, rt))
}

func (a runtimesAPI) handleRegister(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	var b api.RegisterRequest
	if err := s.decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := b.Normalize(); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.deps.Policy.CheckRegister(c, b.Workspace, b.Agent); err != nil {
		s.fail(w, r, err)
		return
	}
	rt, err := s.deps.Runtimes.Register(r.Context(), panes.RegisterRequest{
		Workspace: b.Workspace, Role: b.Role, Agent: b.Agent, AgentID: b.AgentID,
		Target: b.Target, SessionID: b.SessionID, Unmanaged: b.Unmanaged, Host: b.Host, TmuxSocket: b.TmuxSocket, PID: b.PID,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.auditCall(r, c, "api_register", rt.RuntimeID, rt.WorkspaceID, "")
	writeJSON(w, http.StatusCreated, view(s, rt))
}

func (a runtimesAPI) handleDeregister(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	rt, ok := runtimeFor(s, w, r, c, auth.VerbSpawn)
	if !ok {
		return
	}
	reason := r.URL.Query().Get("reason")
	if reason == "" {
		reason = "deregistered by " + c.Subject
	}
	if err := s.deps.Runtimes.Deregister(r.Context(), rt.RuntimeID, reason); err != nil {
		s.fail(w, r, err)
		return
	}
	s.deps.Tokens.RevokeRuntime(context.WithoutCancel(r.Context()), rt.RuntimeID)
	s.auditCall(r, c, "api_deregister", rt.RuntimeID, rt.WorkspaceID, reason)
	writeJSON(w, http.StatusOK, api.Deregistered{Deregistered: true, RuntimeID: rt.RuntimeID})
}

func (a lifecycleAPI) handleStop(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	rt, ok := runtimeFor(s, w, r, c, auth.VerbSpawn)
	if !ok {
		return
	}
	var b api.ReasonRequest
	if err := s.decodeOptional(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if b.Reason == "" {
		b.Reason = "stopped by " + c.Subject
	}
	if err := s.deps.Runtimes.Stop(r.Context(), rt.RuntimeID, b.Reason); err != nil {
		s.fail(w, r, err)
		return
	}
	s.auditCall(r, c, "api_stop", rt.RuntimeID, rt.WorkspaceID, b.Reason)
	rt, _ = s.deps.Runtimes.Get(rt.RuntimeID)
	writeJSON(w, http.StatusOK, view(s, rt))
}

// handleRestart runs a runtime's program again (`nudge restart`): the way back from failed
// (crash loop, start timeout) or exited, and a fresh start for a live one.
func (a lifecycleAPI) handleRestart(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	rt, ok := runtimeFor(s, w, r, c, auth.VerbSpawn)
	if !ok {
		return
	}
	var b api.ReasonRequest
	if err := s.decodeOptional(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if b.Reason == "" {
		b.Reason = "restarted by " + c.Subject
	}
	if !rt.Managed {
		s.fail(w, r, &api.Error{ErrorCode: nudge.UnmanagedRuntime, Message: "runtime " + rt.RuntimeID + " is not managed: nudge does not restart it"})
		return
	}
	rt, err := s.deps.Runtimes.Restart(r.Context(), rt.RuntimeID, b.Reason)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.auditCall(r, c, "api_restart", rt.RuntimeID, rt.WorkspaceID, b.Reason)
	writeJSON(w, http.StatusOK, view(s, rt))
}

func (a lifecycleAPI) handlePause(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	a.setPaused(w, r, c, true)
}

func (a lifecycleAPI) handleResume(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	a.setPaused(w, r, c, false)
}

func (a lifecycleAPI) setPaused(w http.ResponseWriter, r *http.Request, c auth.Caller, paused bool) {
	s := a.s
	rt, ok := runtimeFor(s, w, r, c, auth.VerbAdmin)
	if !ok {
		return
	}
	var b api.ReasonRequest
	if err := s.decodeOptional(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	ev := "triggers_resumed"
	if paused {
		ev = "triggers_paused"
	}
	why := ev + " by " + c.Subject
	if b.Reason != "" {
		why += ": " + b.Reason
	}
	rt, err := s.deps.Runtimes.SetPaused(rt.RuntimeID, paused, why)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.auditCall(r, c, ev, rt.RuntimeID, rt.WorkspaceID, b.Reason)
	s.deps.Triggers.Kick(rt.RuntimeID)
	writeJSON(w, http.StatusOK, view(s, rt))
}

// handleAnswer answers the runtime's approval dialog (nudge answer, approve, deny): the
// caller's identity and reason go into the audit log, refused attempts too.
func (a lifecycleAPI) handleAnswer(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	rt, ok := s.deps.Runtimes.Get(r.PathValue("id"))
	if !ok || !c.Sees(rt.WorkspaceID) {
		s.fail(w, r, unknownRuntimeOf(s, c, r.PathValue("id")))
		return
	}
	var b api.AnswerRequest
	if err := s.decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	why := b.Reason
	if err := c.AllowRuntime(auth.VerbAnswer, rt.RuntimeID, rt.WorkspaceID); err != nil {
		s.auditCall(r, c, "dialog_answer_refused", rt.RuntimeID, rt.WorkspaceID, err.Error()+"; reason given: "+why)
		s.fail(w, r, err)
		return
	}
	if strings.TrimSpace(b.Reason) == "" || b.Choice == "" {
		s.fail(w, r, badRequest("choice and reason are required (the reason goes into the audit log)"))
		return
	}
	if s.deps.Dialogs == nil {
		s.fail(w, r, &api.Error{ErrorCode: nudge.Unavailable, Message: "this daemon cannot answer dialogs"})
		return
	}
	d, opt, err := s.deps.Dialogs.Answer(r.Context(), rt, b.DialogID, b.Choice, c.Subject, b.Reason)
	if err != nil {
		s.auditCall(r, c, "dialog_answer_refused", rt.RuntimeID, rt.WorkspaceID, err.Error()+"; reason given: "+why)
		s.fail(w, r, err)
		return
	}
	s.auditCall(r, c, "dialog_answered", rt.RuntimeID, rt.WorkspaceID,
		fmt.Sprintf("%s: %q → %s (%s); reason: %s", d.DialogID, d.Title, opt.Label, opt.Key, b.Reason))
	s.deps.Triggers.Kick(rt.RuntimeID) // a trigger the dialog held goes once the agent is READY
	writeJSON(w, http.StatusOK, api.Answered{RuntimeID: rt.RuntimeID, Dialog: d, Option: opt})
}

func (a lifecycleAPI) handleHeartbeat(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	rt, ok := runtimeFor(s, w, r, c, auth.VerbHeartbeat)
	if !ok {
		return
	}
	var b api.HeartbeatRequest
	if err := s.decodeOptional(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	switch b.Status {
	case "", "active", "idle", "offline": // seed 000 §8.2; "" means active
	default:
		s.fail(w, r, badRequest("status %q: want active, idle or offline", b.Status))
		return
	}
	now := time.Now()
	at := b.LastActivityAt
	if at.IsZero() || at.After(now) {
		at = now // a clock in the future cannot ack triggers not yet delivered
	}
	if b.SessionID != "" { // bad input changes nothing: checked before the heartbeat acts
		if prof, _ := s.deps.Runtimes.Profile(rt.Agent); !prof.ValidSessionID(b.SessionID) {
			s.fail(w, r, badRequest("session_id %q is not valid for profile %s", b.SessionID, rt.Agent))
			return
		}
		// The agent's own token names a session only while none is known: a known one
		// (what its channel hands prompts to, what a resume reopens) is not the agent's to
		// move, to another workspace's session of a shared app-server for one.
		if c.RuntimeID != "" && rt.SessionID != "" && b.SessionID != rt.SessionID {
			s.fail(w, r, nudge.NewError(nudge.Forbidden, c.Subject+" may not replace runtime "+rt.RuntimeID+
				"'s known session id (use a workspace token)"))
			return
		}
	}
	status := b.Status
	if status == "" {
		status = "active"
	}
	advanced := false
	if status == "offline" {
		s.deps.Acks.Offline(rt.RuntimeID, b.Cursor) // an offline agent acks nothing
	} else {
		advanced = s.deps.Acks.Heartbeat(rt.RuntimeID, at, b.Cursor)
	}
	if advanced {
		// Triggers address the runtime by its role or its agent_id: the loop guard keeps
		// their turns under the runtime, whichever name they used.
		s.deps.Triggers.Progress(rt.WorkspaceID, rt.Role, b.ThreadID)
	}
	rt, err := s.deps.Runtimes.Update(rt.RuntimeID, func(x *nudge.Runtime) {
		x.LastHeartbeatAt, x.HeartbeatStatus = now, status
		if b.Cursor != "" {
			x.LastCursor = b.Cursor
		}
		if b.SessionID != "" {
			x.SessionID = b.SessionID
		}
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.HeartbeatReply{CursorAdvanced: advanced, LastHeartbeatAt: now, RuntimeID: rt.RuntimeID})
}

func (a lifecycleAPI) handleTail(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	rt, ok := runtimeFor(s, w, r, c, auth.VerbRead)
	if !ok {
		return
	}
	n := defaultTailLines
	if q := r.URL.Query().Get("lines"); q != "" {
		v, err := strconv.Atoi(q)
		if err != nil || v <= 0 {
			s.fail(w, r, badRequest("lines: want a positive number"))
			return
		}
		n = min(v, maxTailLines)
	}
	sc, err := s.deps.Panes.Tail(r.Context(), rt, n)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	tv := api.Tail{RuntimeID: rt.RuntimeID, PaneID: rt.PaneID, Lines: sc.Lines, CapturedAt: time.Now(), PaneGone: sc.Gone}
	if sc.Gone {
		tv.CapturedAt = sc.KeptAt
	}
	if tv.Lines == nil {
		tv.Lines = []string{}
	}
	writeJSON(w, http.StatusOK, tv)
}

// Tail lines: the default, and the most one request reads.
const (
	defaultTailLines = 200
	maxTailLines     = 5000
)

// unknownRuntime is the answer for a runtime id that does not exist, and for one the
// caller may not see: the same status and body.
func unknownRuntime(id string) error {
	return &api.Error{ErrorCode: nudge.NotFound, Message: "no runtime " + id}
}

// unknownRuntimeOf is unknownRuntime with the ids a typo away among the runtimes c may
// see ("did you mean ..."): never one of a workspace c does not see, and none at all for
// an id naming such a workspace, so the answer is the same for an id that does not exist
// and for one c may not see.
func unknownRuntimeOf(s *Server, c auth.Caller, id string) error {
	if ws, _, ok := strings.Cut(strings.TrimPrefix(id, "rt_"), "."); ok && !c.Sees(ws) {
		return unknownRuntime(id) // a workspace the caller may not see: nothing of it, nothing near it
	}
	var ids []string
	for _, rt := range s.deps.Runtimes.List() {
		if c.Sees(rt.WorkspaceID) {
			ids = append(ids, rt.RuntimeID)
		}
	}
	return &api.Error{ErrorCode: nudge.NotFound, Message: "no runtime " + id + nudge.Suggest(id, ids)}
}

func (a runtimesAPI) handleHealth(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	h := api.Health{OK: true, Version: s.cfg.Version, StartedAt: s.started, Runtimes: len(s.deps.Runtimes.List()), Tmux: s.cfg.Tmux}
	if c.Unrestricted() {
		paths := s.cfg.Paths
		h.Paths = &paths
		if s.cfg.RecordsUnread != nil {
			h.RecordsUnread = s.cfg.RecordsUnread()
		}
	}
	writeJSON(w, http.StatusOK, h)
}

// maxPermissionField bounds each field of a permission request (a command is shown and
// matched whole; a longer one is no command a dialog shows).
const maxPermissionField = 16 << 10

// handlePermission holds a permission request of the runtime's own hook until nudge
// answers the dialog behind it (permhook). Only the runtime's own token may post one: it
// is the agent's word about itself, and speaks for no other runtime.
func (a lifecycleAPI) handlePermission(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	rt, ok := runtimeFor(s, w, r, c, auth.VerbAck)
	if !ok {
		return
	}
	if c.RuntimeID != rt.RuntimeID {
		s.fail(w, r, nudge.NewError(nudge.Forbidden, "a permission request is the runtime's own hook's (its NUDGE_RUNTIME_TOKEN): "+c.Subject+" may not post one for "+rt.RuntimeID))
		return
	}
	var b api.PermissionRequest
	if err := s.decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	for name, v := range map[string]string{"session_id": b.SessionID, "tool_name": b.Tool, "command": b.Command, "cwd": b.Cwd} {
		if len(v) > maxPermissionField {
			s.fail(w, r, badRequest("%s over %d bytes", name, maxPermissionField))
			return
		}
	}
	var d api.PermissionDecision
	if s.deps.Perms != nil {
		var err error
		if d, err = s.deps.Perms.Ask(r.Context(), rt, b); err != nil && r.Context().Err() != nil {
			return // the hook went away
		}
	}
	writeJSON(w, http.StatusOK, d)
}
