package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/trace"
	"strconv"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/store"
)

func (a triggersAPI) handleTrigger(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	var b api.TriggerRequest
	reg := trace.StartRegion(r.Context(), "api.decode")
	if err := s.decode(w, r, &b); err != nil {
		reg.End()
		s.fail(w, r, err)
		return
	}
	if err := b.Normalize(); err != nil {
		reg.End()
		s.fail(w, r, err)
		return
	}
	if err := s.deps.Policy.CheckTrigger(c, b.Workspace, b.Agent); err != nil {
		reg.End()
		s.fail(w, r, err)
		return
	}
	reg.End()
	req := inject.Request{TriggerID: b.TriggerID, Workspace: b.Workspace, Agent: b.Agent, ThreadID: b.ThreadID,
		Prompt: b.Prompt, AckTimeoutMS: b.AckTimeoutMS, ForceOverride: b.ForceOverride, Reason: b.Reason,
		OverrideIntent: b.OverrideIntent, Caller: c.Subject, CallerUID: c.UID, Received: Received(r.Context())}
	res, err := s.deps.Triggers.Submit(r.Context(), req)
	foreign := err == nil && c.Allow(auth.VerbRead, res.Trigger.WorkspaceID) != nil
	var ne *nudge.Error
	if errors.As(err, &ne) && ne.Code == nudge.IdempotencyConflict {
		// The differing fields are shown only to a caller who may read the first trigger.
		t, gerr := s.deps.Triggers.Get(req.TriggerID)
		var aged *store.AgedOutError
		if errors.As(gerr, &aged) { // aged out: its tombstone keeps the workspace
			t.WorkspaceID, gerr = aged.Workspace, nil
		}
		foreign = gerr != nil || c.Allow(auth.VerbRead, t.WorkspaceID) != nil
	}
	if foreign {
		err = &api.Error{ErrorCode: nudge.Conflict, Message: "trigger_id " + req.TriggerID + " is already used"} // by another workspace: show nothing of it
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	t := res.Trigger
	defer trace.StartRegion(r.Context(), "api.answer").End()
	a.logTrigger(r, t, res.Created)
	status := http.StatusAccepted
	if !res.Created {
		status = http.StatusOK
		if !t.Closed {
			t.Result = nudge.ResultAlreadyActive
		}
	}
	writeJSON(w, status, t)
}

func (a triggersAPI) handleGetTrigger(rw http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	t, err := a.readableTrigger(c, r.PathValue("id"))
	if err != nil {
		s.fail(rw, r, err)
		return
	}
	w := api.WaitClosed
	switch f := r.URL.Query().Get("for"); f {
	case "", "closed":
	case "reply":
		w = api.WaitReply
	default:
		s.fail(rw, r, badRequest("for=%q: want closed or reply", f))
		return
	}
	if wait, _ := time.ParseDuration(r.URL.Query().Get("wait")); wait > 0 && !w.ReachedBy(t) && !w.Over(t) {
		t = a.waitTrigger(r.Context(), t.TriggerID, min(wait, 10*time.Minute), w)
	}
	writeJSON(rw, http.StatusOK, withResult(t))
}

// withResult fills a receipt's result word if it has none (a record written by an older
// daemon): result is never empty.
func withResult(t nudge.Trigger) nudge.Trigger {
	if t.Result == "" {
		t.Result = inject.ResultFor(t)
	}
	return t
}

// waitTrigger blocks until the trigger reaches w (closed, or its reply) or can no more,
// wait passes, or ctx ends, and returns its latest record.
func (a triggersAPI) waitTrigger(ctx context.Context, id string, wait time.Duration, w api.WaitFor) nudge.Trigger {
	s := a.s
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	t, _ := s.deps.Triggers.Wait(ctx, id, func(t nudge.Trigger) bool { return w.ReachedBy(t) || w.Over(t) })
	return t
}

func (a triggersAPI) handleListTriggers(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	s.deps.Store.Flush() // write-behind records first
	q := r.URL.Query()
	f := store.TriggerFilter{RuntimeID: q.Get("runtime"), ThreadID: q.Get("thread"), Workspace: q.Get("workspace"),
		Agent: q.Get("agent"), OpenOnly: q.Get("open") == "1" || q.Get("open") == "true", Newest: q.Get("newest") == "1"}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		f.Limit = n
	}
	if f.Workspace == "" && len(c.Workspaces) == 1 {
		// A caller of one workspace: its limit counts its triggers, not those it may not see.
		f.Workspace = c.Workspaces[0]
	}
	ts, err := s.deps.Store.ListTriggers(f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := []nudge.Trigger{}
	for _, t := range ts {
		if c.Allow(auth.VerbRead, t.WorkspaceID) == nil {
			if t.Host == "" { // this host's own (another host's came as it stands now)
				if live, err := s.deps.Triggers.Get(t.TriggerID); err == nil {
					if c.Allow(auth.VerbRead, live.WorkspaceID) != nil {
						continue // the record read by id is another workspace's
					}
					t = live
				}
			}
			out = append(out, withResult(t))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (a triggersAPI) handleAck(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	id := r.PathValue("id")
	t, err := a.readableTrigger(c, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := c.AllowTrigger(auth.VerbAck, t.TriggerID, t.RuntimeID, t.WorkspaceID); err != nil {
		s.fail(w, r, err)
		return
	}
	if t, err = s.deps.Triggers.Ack(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	s.auditCall(r, c, "api_ack", t.RuntimeID, t.WorkspaceID, "trigger "+id)
	// The caller is told "acked" only once the record says so on disk: an ack lost to a
	// kill -9 right after would have the restarted daemon retype an answered prompt.
	s.deps.Store.Flush()
	writeJSON(w, http.StatusOK, t)
}

func (a triggersAPI) handleForce(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	var b api.ForceRequest
	if err := s.decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	t, err := a.readableTrigger(c, r.PathValue("id")) // another workspace's is unknown, as everywhere
	if err == nil {
		err = c.Allow(auth.VerbAdmin, t.WorkspaceID)
	}
	if err == nil {
		t, err = s.deps.Triggers.Force(t.TriggerID, c.Subject, b.Reason, b.Intent)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (a triggersAPI) handleUnblock(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	var b api.UnblockRequest
	if err := s.decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	thread := r.PathValue("id")
	agents := []string{b.Workspace + "/" + b.Agent}
	switch {
	case b.Workspace == "" && b.Agent == "":
		// The thread, for every agent of a workspace the caller administers.
		agents = s.deps.Triggers.Unblock(thread, func(ws string) bool { return c.Allow(auth.VerbAdmin, ws) == nil })
	case b.Workspace == "" || b.Agent == "":
		s.fail(w, r, badRequest("workspace and agent go together (or neither: the thread for every agent)"))
		return
	default:
		if err := c.Allow(auth.VerbAdmin, b.Workspace); err != nil {
			s.fail(w, r, err)
			return
		}
		s.deps.Triggers.Progress(b.Workspace, b.Agent, thread)
	}
	uid := c.UID
	for _, a := range agents {
		ws, _, _ := strings.Cut(a, "/")
		if _, err := s.deps.Store.AppendAudit(nudge.AuditRecord{Event: "thread_unblocked", ThreadID: thread,
			Workspace: ws, Subject: c.Subject, PeerUID: &uid, Reason: b.Reason, Detail: agentDetail(a)}); err != nil {
			s.log.Error("audit", "event", "thread_unblocked", "err", err)
		}
	}
	writeJSON(w, http.StatusOK, api.Unblocked{Agents: agents, ThreadID: thread, Unblocked: true})
}

// unknownTrigger is the answer for a trigger id that does not exist — and for one the
// caller may not read: the same status and body.
func unknownTrigger(id string) error {
	return fmt.Errorf("get trigger %s: %w", id, store.ErrNotFound)
}

// readableTrigger looks a trigger up for c: one outside c's workspaces is unknown.
func (a triggersAPI) readableTrigger(c auth.Caller, id string) (nudge.Trigger, error) {
	s := a.s
	t, err := s.deps.Triggers.Get(id)
	var aged *store.AgedOutError
	if errors.As(err, &aged) && !c.Sees(aged.Workspace) {
		return nudge.Trigger{}, unknownTrigger(id) // when another workspace's trigger aged out is not this caller's business
	}
	if err != nil {
		return t, err
	}
	if !c.Sees(t.WorkspaceID) {
		return nudge.Trigger{}, unknownTrigger(id)
	}
	return t, nil
}

// agentDetail is a thread_unblocked record's detail: {"agent": "WS/ROLE"}.
func agentDetail(agent string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Agent string `json:"agent"`
	}{agent})
	return b
}

// logTrigger writes the one info line per trigger request.
func (a triggersAPI) logTrigger(r *http.Request, t nudge.Trigger, created bool) {
	s := a.s
	s.log.Info("trigger request", "request_id", RequestID(r.Context()), "trigger_id", t.TriggerID,
		"thread_id", t.ThreadID, "agent_id", t.Agent, "runtime_id", t.RuntimeID, "workspace", t.WorkspaceID,
		"state", t.State, "result", t.Result, "error_code", t.ErrorCode, "fallback_used", t.Fallback != "",
		"created", created)
}
