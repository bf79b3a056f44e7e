package main

import (
	"context"
	"net/http"
	"runtime/trace"
	"strconv"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/panes"
	"github.com/nudgehq/nudge/store"
)

// routes is the socket API (DESIGN.md, "External contract").
func (d *daemon) routes() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern, verb string, fn func(w http.ResponseWriter, r *http.Request, c caller)) {
		mux.Handle(pattern, d.guard(verb, fn))
	}
	h("GET /v1/health", verbRead, d.handleHealth)
	h("GET /v1/runtimes", verbRead, d.handleListRuntimes)
	h("POST /v1/runtimes", verbSpawn, d.handleSpawn)
	h("POST /v1/runtimes/register", verbSpawn, d.handleRegister)
	h("GET /v1/runtimes/{id}", verbRead, d.handleGetRuntime)
	h("DELETE /v1/runtimes/{id}", verbSpawn, d.handleDeregister)
	h("POST /v1/runtimes/{id}/stop", verbSpawn, d.handleStop)
	h("POST /v1/runtimes/{id}/restart", verbSpawn, d.handleRestart)
	h("POST /v1/runtimes/{id}/pause", verbAdmin, d.handlePause)
	h("POST /v1/runtimes/{id}/resume", verbAdmin, d.handleResume)
	h("POST /v1/runtimes/{id}/heartbeat", verbHeartbeat, d.handleHeartbeat)
	h("GET /v1/runtimes/{id}/tail", verbRead, d.handleTail)
	h("POST /v1/triggers", verbTrigger, d.handleTrigger)
	h("GET /v1/triggers", verbRead, d.handleListTriggers)
	h("GET /v1/triggers/{id}", verbRead, d.handleGetTrigger)
	h("POST /v1/triggers/{id}/ack", verbAck, d.handleAck)
	h("POST /v1/triggers/{id}/force", verbAdmin, d.handleForce)
	h("POST /v1/threads/{id}/unblock", verbAdmin, d.handleUnblock)
	h("GET /v1/events", verbRead, d.serveScopedEvents)
	h("GET /v1/audit", verbRead, d.handleAudit)
	h("GET /v1/schedules", verbRead, d.handleListSchedules)
	h("POST /v1/schedules", verbTrigger, d.handleAddSchedule)
	h("DELETE /v1/schedules/{id}", verbTrigger, d.handleDeleteSchedule)
	h("GET /metrics", verbRead, func(w http.ResponseWriter, r *http.Request, _ caller) { d.handleMetrics(w, r) })
	d.tokenRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{nudge.NotFound, "no such endpoint: " + r.Method + " " + r.URL.Path})
	})
	return mux
}

// guard authenticates the caller, checks the verb, and turns a panic into a 500 so bad
// input never takes the daemon down.
func (d *daemon) guard(verb string, fn func(http.ResponseWriter, *http.Request, caller)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received := time.Now()
		defer func() {
			if v := recover(); v != nil {
				d.log.Error("handler panic", "path", r.URL.Path, "panic", v)
				writeError(w, &apiError{nudge.Internal, "internal error"})
			}
		}()
		r = withRequestID(r, received)
		c, err := d.authenticate(r)
		if err == nil {
			err = c.Allow(verb, "")
		}
		if err != nil {
			d.auditRefusal(r, c, err)
			writeError(w, err)
			return
		}
		fn(w, r, c)
	})
}

func (d *daemon) handleHealth(w http.ResponseWriter, r *http.Request, c caller) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "version": version, "started_at": d.started, "runtimes": len(d.reg.List())})
}

// runtimeView is a runtime as the API shows it.
type runtimeView struct {
	nudge.Runtime
	QueueDepth int `json:"queue_depth"`
}

func (d *daemon) view(rt nudge.Runtime) runtimeView {
	return runtimeView{Runtime: rt, QueueDepth: d.pipe.Depth(rt.RuntimeID)}
}

func (d *daemon) handleListRuntimes(w http.ResponseWriter, r *http.Request, c caller) {
	out := []runtimeView{}
	ws := r.URL.Query().Get("workspace")
	for _, rt := range d.reg.List() {
		if (ws == "" || rt.WorkspaceID == ws) && c.Allow(verbRead, rt.WorkspaceID) == nil {
			out = append(out, d.view(rt))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *daemon) runtimeFor(w http.ResponseWriter, r *http.Request, c caller, verb string) (nudge.Runtime, bool) {
	rt, ok := d.reg.Get(r.PathValue("id"))
	if !ok || !c.Sees(rt.WorkspaceID) {
		writeError(w, unknownRuntime(r.PathValue("id")))
		return nudge.Runtime{}, false
	}
	if err := c.AllowRuntime(verb, rt.RuntimeID, rt.WorkspaceID); err != nil {
		writeError(w, err)
		return rt, false
	}
	return rt, true
}

func (d *daemon) handleGetRuntime(w http.ResponseWriter, r *http.Request, c caller) {
	if rt, ok := d.runtimeFor(w, r, c, verbRead); ok {
		writeJSON(w, http.StatusOK, d.view(rt))
	}
}

// spawnBody is POST /v1/runtimes.
type spawnBody struct {
	Workspace  string   `json:"workspace"`
	Role       string   `json:"role"`
	Agent      string   `json:"agent"`
	AgentID    string   `json:"agent_id"`
	Dir        string   `json:"dir"`
	SessionID  string   `json:"session_id"`
	PromptFile string   `json:"prompt_file"`
	Argv       []string `json:"argv"`
	Host       string   `json:"host,omitempty"` // ssh destination of a new workspace's tmux; "" local
}

func (d *daemon) handleSpawn(w http.ResponseWriter, r *http.Request, c caller) {
	var b spawnBody
	if err := decodeJSON(w, r, &b); err != nil {
		writeError(w, err)
		return
	}
	host := b.Host
	if host == "" {
		host = d.reg.HostOf(b.Workspace)
	}
	sp := auth.Spawn{Workspace: b.Workspace, Agent: b.Agent, Dir: b.Dir, Argv: b.Argv, Host: host}
	if err := d.auth.Policy().CheckSpawn(c, &sp); err != nil {
		writeError(w, err)
		return
	}
	b.Dir = sp.Dir
	rt, err := d.reg.Spawn(r.Context(), panes.SpawnRequest{
		Workspace: b.Workspace, Role: b.Role, Agent: b.Agent, AgentID: b.AgentID, Dir: b.Dir,
		SessionID: b.SessionID, PromptFile: b.PromptFile, Argv: b.Argv, Host: b.Host,
	})
	if err != nil {
		writeError(w, err)
		return
	}
	d.auditCall(r, c, "api_spawn", rt.RuntimeID, rt.WorkspaceID, "")
	writeJSON(w, http.StatusCreated, d.view(rt))
}

// registerBody is POST /v1/runtimes/register.
type registerBody struct {
	Workspace string `json:"workspace"`
	Role      string `json:"role"`
	Agent     string `json:"agent"`
	AgentID   string `json:"agent_id"`
	Target    string `json:"target"`
	SessionID string `json:"session_id"`
	Unmanaged bool   `json:"unmanaged"`
	Host      string `json:"host,omitempty"` // ssh destination of a new workspace's tmux; "" local
}

func (d *daemon) handleRegister(w http.ResponseWriter, r *http.Request, c caller) {
	var b registerBody
	if err := decodeJSON(w, r, &b); err != nil {
		writeError(w, err)
		return
	}
	if err := d.auth.Policy().CheckRegister(c, b.Workspace, b.Agent); err != nil {
		writeError(w, err)
		return
	}
	rt, err := d.reg.Register(r.Context(), panes.RegisterRequest{
		Workspace: b.Workspace, Role: b.Role, Agent: b.Agent, AgentID: b.AgentID,
		Target: b.Target, SessionID: b.SessionID, Unmanaged: b.Unmanaged, Host: b.Host,
	})
	if err != nil {
		writeError(w, err)
		return
	}
	d.auditCall(r, c, "api_register", rt.RuntimeID, rt.WorkspaceID, "")
	writeJSON(w, http.StatusCreated, d.view(rt))
}

// reasonBody carries an optional reason.
type reasonBody struct {
	Reason string `json:"reason"`
}

func decodeOptional(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	return decodeJSON(w, r, v)
}

func (d *daemon) handleDeregister(w http.ResponseWriter, r *http.Request, c caller) {
	rt, ok := d.runtimeFor(w, r, c, verbSpawn)
	if !ok {
		return
	}
	reason := r.URL.Query().Get("reason")
	if reason == "" {
		reason = "deregistered by " + c.Subject
	}
	if err := d.reg.Deregister(r.Context(), rt.RuntimeID, reason); err != nil {
		writeError(w, err)
		return
	}
	d.revokeRuntime(rt.RuntimeID)
	d.auditCall(r, c, "api_deregister", rt.RuntimeID, rt.WorkspaceID, reason)
	writeJSON(w, http.StatusOK, map[string]any{"runtime_id": rt.RuntimeID, "deregistered": true})
}

func (d *daemon) handleStop(w http.ResponseWriter, r *http.Request, c caller) {
	rt, ok := d.runtimeFor(w, r, c, verbSpawn)
	if !ok {
		return
	}
	var b reasonBody
	if err := decodeOptional(w, r, &b); err != nil {
		writeError(w, err)
		return
	}
	if b.Reason == "" {
		b.Reason = "stopped by " + c.Subject
	}
	if err := d.reg.Stop(r.Context(), rt.RuntimeID, b.Reason); err != nil {
		writeError(w, err)
		return
	}
	d.auditCall(r, c, "api_stop", rt.RuntimeID, rt.WorkspaceID, b.Reason)
	rt, _ = d.reg.Get(rt.RuntimeID)
	writeJSON(w, http.StatusOK, d.view(rt))
}

// handleRestart runs a runtime's program again (`nudge restart`): the way back from failed
// (crash loop, start timeout) or exited, and a fresh start for a live one.
func (d *daemon) handleRestart(w http.ResponseWriter, r *http.Request, c caller) {
	rt, ok := d.runtimeFor(w, r, c, verbSpawn)
	if !ok {
		return
	}
	var b reasonBody
	if err := decodeOptional(w, r, &b); err != nil {
		writeError(w, err)
		return
	}
	if b.Reason == "" {
		b.Reason = "restarted by " + c.Subject
	}
	if !rt.Managed {
		writeError(w, &apiError{nudge.UnmanagedRuntime, "runtime " + rt.RuntimeID + " is not managed: nudge does not restart it"})
		return
	}
	rt, err := d.reg.Restart(r.Context(), rt.RuntimeID, b.Reason)
	if err != nil {
		writeError(w, err)
		return
	}
	d.auditCall(r, c, "api_restart", rt.RuntimeID, rt.WorkspaceID, b.Reason)
	writeJSON(w, http.StatusOK, d.view(rt))
}

func (d *daemon) handlePause(w http.ResponseWriter, r *http.Request, c caller) {
	d.setPaused(w, r, c, true)
}

func (d *daemon) handleResume(w http.ResponseWriter, r *http.Request, c caller) {
	d.setPaused(w, r, c, false)
}

func (d *daemon) setPaused(w http.ResponseWriter, r *http.Request, c caller, paused bool) {
	rt, ok := d.runtimeFor(w, r, c, verbAdmin)
	if !ok {
		return
	}
	ev := "triggers_resumed"
	if paused {
		ev = "triggers_paused"
	}
	rt, err := d.reg.SetPaused(rt.RuntimeID, paused, ev+" by "+c.Subject)
	if err != nil {
		writeError(w, err)
		return
	}
	d.auditCall(r, c, ev, rt.RuntimeID, rt.WorkspaceID, "")
	d.pipe.Kick(rt.RuntimeID)
	writeJSON(w, http.StatusOK, d.view(rt))
}

// heartbeatBody is POST /v1/runtimes/{id}/heartbeat (seed 000 §10.3).
type heartbeatBody struct {
	Status         string    `json:"status"`
	LastActivityAt time.Time `json:"last_activity_at"`
	Cursor         string    `json:"cursor"`
	ThreadID       string    `json:"thread_id"`
	// SessionID reports the agent's own session id (for resume), once it has one.
	SessionID string `json:"session_id,omitempty"`
}

func (d *daemon) handleHeartbeat(w http.ResponseWriter, r *http.Request, c caller) {
	rt, ok := d.runtimeFor(w, r, c, verbHeartbeat)
	if !ok {
		return
	}
	var b heartbeatBody
	if err := decodeOptional(w, r, &b); err != nil {
		writeError(w, err)
		return
	}
	switch b.Status {
	case "", "active", "idle", "offline": // seed 000 §8.2; "" means active
	default:
		writeError(w, badRequest("status %q: want active, idle or offline", b.Status))
		return
	}
	now := time.Now()
	at := b.LastActivityAt
	if at.IsZero() || at.After(now) {
		at = now // a clock in the future cannot ack triggers not yet delivered
	}
	if b.SessionID != "" { // bad input changes nothing: checked before the heartbeat acts
		if prof, _ := d.reg.Profile(rt.Agent); !prof.ValidSessionID(b.SessionID) {
			writeError(w, badRequest("session_id %q is not valid for profile %s", b.SessionID, rt.Agent))
			return
		}
	}
	advanced := d.acks.Heartbeat(rt.RuntimeID, at, b.Cursor)
	if advanced {
		d.pipe.Progress(rt.WorkspaceID, rt.AgentID, b.ThreadID)
	}
	rt, err := d.reg.Update(rt.RuntimeID, func(x *nudge.Runtime) {
		x.LastHeartbeatAt = now
		if b.Cursor != "" {
			x.LastCursor = b.Cursor
		}
		if b.SessionID != "" {
			x.SessionID = b.SessionID
		}
	})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"runtime_id": rt.RuntimeID, "last_heartbeat_at": now, "cursor_advanced": advanced})
}

func (d *daemon) handleTrigger(w http.ResponseWriter, r *http.Request, c caller) {
	var req inject.Request
	reg := trace.StartRegion(r.Context(), "api.decode")
	if err := decodeJSON(w, r, &req); err != nil {
		reg.End()
		writeError(w, err)
		return
	}
	if err := d.auth.Policy().CheckTrigger(c, req.Workspace, req.Agent); err != nil {
		reg.End()
		writeError(w, err)
		return
	}
	reg.End()
	req.Caller, req.CallerUID = c.Subject, c.UID
	req.Received = requestReceived(r.Context())
	res, err := d.pipe.Submit(r.Context(), req)
	if err == nil && c.Allow(verbRead, res.Trigger.WorkspaceID) != nil {
		err = &apiError{nudge.Conflict, "trigger_id " + req.TriggerID + " is already used"} // by another workspace: show nothing of it
	}
	if err != nil {
		writeError(w, err)
		return
	}
	t := res.Trigger
	defer trace.StartRegion(r.Context(), "api.answer").End()
	d.logTrigger(r, t, res.Created)
	status := http.StatusAccepted
	if !res.Created {
		status = http.StatusOK
		if !t.Closed {
			t.Result = nudge.ResultAlreadyActive
		}
	}
	writeJSON(w, status, t)
}

func (d *daemon) handleGetTrigger(w http.ResponseWriter, r *http.Request, c caller) {
	t, err := d.readableTrigger(c, r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	if wait, _ := time.ParseDuration(r.URL.Query().Get("wait")); wait > 0 && !t.Closed {
		t = d.waitTrigger(r.Context(), t.TriggerID, min(wait, 10*time.Minute))
	}
	writeJSON(w, http.StatusOK, withResult(t))
}

// withResult fills a receipt's result word if it has none (a record written by an older
// daemon): result is never empty.
func withResult(t nudge.Trigger) nudge.Trigger {
	if t.Result == "" {
		t.Result = inject.ResultFor(t)
	}
	return t
}

// waitTrigger blocks until the trigger is closed, wait passes, or ctx ends, and returns
// its latest record.
func (d *daemon) waitTrigger(ctx context.Context, id string, wait time.Duration) nudge.Trigger {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	t, _ := d.pipe.Wait(ctx, id, func(t nudge.Trigger) bool { return t.Closed })
	return t
}

func (d *daemon) handleListTriggers(w http.ResponseWriter, r *http.Request, c caller) {
	d.db.Flush() // write-behind records first
	q := r.URL.Query()
	f := store.TriggerFilter{RuntimeID: q.Get("runtime"), ThreadID: q.Get("thread"), Workspace: q.Get("workspace"),
		Agent: q.Get("agent"), OpenOnly: q.Get("open") == "1" || q.Get("open") == "true", Newest: q.Get("newest") == "1"}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		f.Limit = n
	}
	ts, err := d.db.ListTriggers(f)
	if err != nil {
		writeError(w, err)
		return
	}
	out := []nudge.Trigger{}
	for _, t := range ts {
		if c.Allow(verbRead, t.WorkspaceID) == nil {
			if live, err := d.pipe.Get(t.TriggerID); err == nil {
				t = live
			}
			out = append(out, withResult(t))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *daemon) handleAck(w http.ResponseWriter, r *http.Request, c caller) {
	id := r.PathValue("id")
	t, err := d.readableTrigger(c, id)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := c.AllowTrigger(verbAck, t.TriggerID, t.RuntimeID, t.WorkspaceID); err != nil {
		writeError(w, err)
		return
	}
	if t, err = d.pipe.Ack(r.Context(), id); err != nil {
		writeError(w, err)
		return
	}
	d.auditCall(r, c, "api_ack", t.RuntimeID, t.WorkspaceID, "trigger "+id)
	// The caller is told "acked" only once the record says so on disk: an ack lost to a
	// kill -9 right after would have the restarted daemon retype an answered prompt.
	d.db.Flush()
	writeJSON(w, http.StatusOK, t)
}

// forceBody is POST /v1/triggers/{id}/force.
type forceBody struct {
	Reason string `json:"reason"`
	Intent string `json:"override_intent"`
}

func (d *daemon) handleForce(w http.ResponseWriter, r *http.Request, c caller) {
	var b forceBody
	if err := decodeJSON(w, r, &b); err != nil {
		writeError(w, err)
		return
	}
	t, err := d.pipe.Get(r.PathValue("id"))
	if err == nil {
		err = c.Allow(verbAdmin, t.WorkspaceID)
	}
	if err == nil {
		t, err = d.pipe.Force(t.TriggerID, c.Subject, b.Reason, b.Intent)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// unblockBody is POST /v1/threads/{id}/unblock.
type unblockBody struct {
	Workspace string `json:"workspace"`
	Agent     string `json:"agent"`
	Reason    string `json:"reason"`
}

func (d *daemon) handleUnblock(w http.ResponseWriter, r *http.Request, c caller) {
	var b unblockBody
	if err := decodeJSON(w, r, &b); err != nil {
		writeError(w, err)
		return
	}
	thread := r.PathValue("id")
	agents := []string{b.Workspace + "/" + b.Agent}
	switch {
	case b.Workspace == "" && b.Agent == "":
		// The thread, for every agent of a workspace the caller administers.
		agents = d.pipe.Unblock(thread, func(ws string) bool { return c.Allow(verbAdmin, ws) == nil })
	case b.Workspace == "" || b.Agent == "":
		writeError(w, badRequest("workspace and agent go together (or neither: the thread for every agent)"))
		return
	default:
		if err := c.Allow(verbAdmin, b.Workspace); err != nil {
			writeError(w, err)
			return
		}
		d.pipe.Progress(b.Workspace, b.Agent, thread)
	}
	uid := c.UID
	for _, a := range agents {
		ws, _, _ := strings.Cut(a, "/")
		if _, err := d.db.AppendAudit(nudge.AuditRecord{Event: "thread_unblocked", ThreadID: thread,
			Workspace: ws, Subject: c.Subject, PeerUID: &uid, Reason: b.Reason, Detail: mustJSON(map[string]string{"agent": a})}); err != nil {
			d.log.Error("audit", "event", "thread_unblocked", "err", err)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"thread_id": thread, "unblocked": true, "agents": agents})
}

func (d *daemon) handleAudit(w http.ResponseWriter, r *http.Request, c caller) {
	d.db.Flush() // write-behind records first
	q := r.URL.Query()
	if q.Get("verify") == "1" || q.Get("verify") == "true" {
		n, err := d.db.VerifyAudit()
		res := map[string]any{"ok": err == nil, "records": n}
		if err != nil {
			res["error"] = err.Error()
		}
		writeJSON(w, http.StatusOK, res)
		return
	}
	f := store.AuditFilter{TriggerID: q.Get("trigger"), RuntimeID: q.Get("runtime"), ThreadID: q.Get("thread"),
		Workspace: q.Get("workspace"), Event: q.Get("event")}
	var err error
	if f.Since, err = parseTimeParam(q.Get("since")); err == nil {
		f.Until, err = parseTimeParam(q.Get("until"))
	}
	if err != nil {
		writeError(w, badRequest("since/until: %v", err))
		return
	}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		f.Limit, f.Newest = n, q.Get("newest") == "1"
	}
	recs, err := d.db.Audit(f)
	if err != nil {
		writeError(w, err)
		return
	}
	out := []nudge.AuditRecord{}
	triggerWS := map[string]string{}
	lookup := func(id string) string {
		ws, ok := triggerWS[id]
		if !ok {
			if t, err := d.db.GetTrigger(id); err == nil {
				ws = t.WorkspaceID
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
func (d *daemon) auditCall(r *http.Request, c caller, event, runtimeID, workspace, reason string) {
	uid := c.UID
	rec := nudge.AuditRecord{Event: event, RuntimeID: runtimeID, Workspace: workspace, Subject: c.Subject, PeerUID: &uid, Reason: reason}
	if _, err := d.db.AppendAudit(rec); err != nil {
		d.log.Error("audit", "event", event, "err", err)
	}
}
