package server

import (
	"net/http"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/cmd/nudge/events"
)

// The handlers, by the part of the API they serve; each holds the server.
type (
	runtimesAPI  struct{ s *Server } // /v1/health, /v1/runtimes: list, get, spawn, register, deregister
	lifecycleAPI struct{ s *Server } // a runtime's stop, restart, pause, resume, heartbeat, tail
	triggersAPI  struct{ s *Server } // /v1/triggers, acks, force, /v1/threads
	auditAPI     struct{ s *Server } // /v1/audit, /v1/schedules
	tokensAPI    struct{ s *Server } // /v1/tokens
)

// handlerFunc is a handler of an authenticated request.
type handlerFunc func(w http.ResponseWriter, r *http.Request, c auth.Caller)

// Handler is the socket API (DESIGN.md, "External contract").
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern, verb string, fn handlerFunc) { mux.Handle(pattern, s.guard(verb, fn)) }
	rts, life, trig := runtimesAPI{s}, lifecycleAPI{s}, triggersAPI{s}
	audit, tokens := auditAPI{s}, tokensAPI{s}
	h("GET /v1/health", auth.VerbRead, rts.handleHealth)
	h("GET /v1/runtimes", auth.VerbRead, rts.handleListRuntimes)
	h("POST /v1/runtimes", auth.VerbSpawn, rts.handleSpawn)
	h("POST /v1/runtimes/register", auth.VerbSpawn, rts.handleRegister)
	h("GET /v1/runtimes/{id}", auth.VerbRead, rts.handleGetRuntime)
	h("GET /v1/unmanaged", auth.VerbRead, rts.handleUnmanaged)
	h("DELETE /v1/runtimes/{id}", auth.VerbSpawn, rts.handleDeregister)
	h("POST /v1/runtimes/{id}/stop", auth.VerbSpawn, life.handleStop)
	h("POST /v1/runtimes/{id}/restart", auth.VerbSpawn, life.handleRestart)
	h("POST /v1/runtimes/{id}/pause", auth.VerbAdmin, life.handlePause)
	h("POST /v1/runtimes/{id}/resume", auth.VerbAdmin, life.handleResume)
	h("POST /v1/runtimes/{id}/heartbeat", auth.VerbHeartbeat, life.handleHeartbeat)
	h("POST /v1/runtimes/{id}/answer", auth.VerbAnswer, life.handleAnswer)
	h("POST /v1/runtimes/{id}/permission", auth.VerbAck, life.handlePermission)
	h("GET /v1/runtimes/{id}/tail", auth.VerbRead, life.handleTail)
	h("POST /v1/triggers", auth.VerbTrigger, trig.handleTrigger)
	h("GET /v1/triggers", auth.VerbRead, trig.handleListTriggers)
	h("GET /v1/triggers/{id}", auth.VerbRead, trig.handleGetTrigger)
	h("POST /v1/triggers/{id}/ack", auth.VerbAck, trig.handleAck)
	h("POST /v1/triggers/{id}/force", auth.VerbAdmin, trig.handleForce)
	h("POST /v1/threads/{id}/unblock", auth.VerbAdmin, trig.handleUnblock)
	h("POST /v1/threads/{id}/head", auth.VerbTrigger, trig.handleThreadHead)
	h("GET /v1/events", auth.VerbRead, s.handleEvents)
	h("GET /v1/audit", auth.VerbRead, audit.handleAudit)
	h("GET /v1/schedules", auth.VerbRead, audit.handleListSchedules)
	h("POST /v1/schedules", auth.VerbTrigger, audit.handleAddSchedule)
	h("DELETE /v1/schedules/{id}", auth.VerbTrigger, audit.handleDeleteSchedule)
	h("GET /metrics", auth.VerbRead, func(w http.ResponseWriter, r *http.Request, c auth.Caller) {
		if !c.Sees("") { // its series name every workspace's runtimes
			s.fail(w, r, &api.Error{ErrorCode: nudge.Forbidden, Message: "/metrics covers every workspace: ask with a token for all workspaces (nudge token issue --verbs read), or with none"})
			return
		}
		s.handleMetrics(w, r)
	})
	h("POST /v1/tokens", auth.VerbAdmin, tokens.handleIssueToken)
	h("GET /v1/tokens", auth.VerbAdmin, tokens.handleListTokens)
	h("DELETE /v1/tokens/{id}", auth.VerbAdmin, tokens.handleRevokeToken)
	h("POST /v1/tokens/rotate-key", auth.VerbAdmin, tokens.handleRotateKey)
	h("POST /v1/web/pair", auth.VerbAdmin, tokens.handleWebPair)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, &api.Error{ErrorCode: nudge.NotFound, Message: "no such endpoint: " + r.Method + " " + r.URL.Path})
	})
	return mux
}

// guard gives the request its id, authenticates the caller, checks the verb, puts the
// caller in the request's context (auth.CallerFrom), and turns a panic into a 500 so
// bad input never takes the daemon down.
func (s *Server) guard(verb string, fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = withRequestID(r, time.Now())
		defer func() {
			if v := recover(); v != nil {
				s.log.Error("handler panic", "request_id", RequestID(r.Context()), "path", r.URL.Path, "panic", v)
				writeJSON(w, http.StatusInternalServerError, &api.Error{ErrorCode: nudge.Internal,
					Message: "internal error (request " + RequestID(r.Context()) + ")"})
			}
		}()
		c, err := s.deps.Auth.Authenticate(peerOf(r.Context()), r.Header.Get("Authorization"))
		if err == nil {
			err = c.Allow(verb, "")
		}
		if err != nil {
			s.auditRefusal(r, c, err)
			s.fail(w, r, err)
			return
		}
		fn(w, r.WithContext(auth.WithCaller(r.Context(), c)), c)
	})
}

// handleEvents is /v1/events: the events of the workspaces the caller may read.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	if s.deps.Events == nil {
		s.fail(w, r, &api.Error{ErrorCode: nudge.NotFound, Message: "no such endpoint: " + r.Method + " " + r.URL.Path})
		return
	}
	if err := s.deps.Events.Serve(w, r, func(ev events.Event) bool { return c.Sees(ev.Workspace) }); err != nil {
		s.fail(w, r, err) // a bad or expired since (410 EVENTS_EXPIRED), before any event
	}
}

// handleMetrics serves the Prometheus text format (on the socket and on MetricsAddr).
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	if s.deps.Metrics == nil {
		return
	}
	if err := s.deps.Metrics.WritePrometheus(w); err != nil {
		s.log.Debug("write metrics", "err", err)
	}
}
