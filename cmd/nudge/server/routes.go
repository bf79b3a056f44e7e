package server

import (
	"net/http"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/cmd/nudge/events"
)

// handlerFunc is a handler of an authenticated request.
type handlerFunc func(w http.ResponseWriter, r *http.Request, c auth.Caller)

// Handler is the socket API (DESIGN.md, "External contract").
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern, verb string, fn handlerFunc) { mux.Handle(pattern, s.guard(verb, fn)) }
	h("GET /v1/health", auth.VerbRead, s.handleHealth)
	h("GET /v1/runtimes", auth.VerbRead, s.handleListRuntimes)
	h("POST /v1/runtimes", auth.VerbSpawn, s.handleSpawn)
	h("POST /v1/runtimes/register", auth.VerbSpawn, s.handleRegister)
	h("GET /v1/runtimes/{id}", auth.VerbRead, s.handleGetRuntime)
	h("DELETE /v1/runtimes/{id}", auth.VerbSpawn, s.handleDeregister)
	h("POST /v1/runtimes/{id}/stop", auth.VerbSpawn, s.handleStop)
	h("POST /v1/runtimes/{id}/restart", auth.VerbSpawn, s.handleRestart)
	h("POST /v1/runtimes/{id}/pause", auth.VerbAdmin, s.handlePause)
	h("POST /v1/runtimes/{id}/resume", auth.VerbAdmin, s.handleResume)
	h("POST /v1/runtimes/{id}/heartbeat", auth.VerbHeartbeat, s.handleHeartbeat)
	h("GET /v1/runtimes/{id}/tail", auth.VerbRead, s.handleTail)
	h("POST /v1/triggers", auth.VerbTrigger, s.handleTrigger)
	h("GET /v1/triggers", auth.VerbRead, s.handleListTriggers)
	h("GET /v1/triggers/{id}", auth.VerbRead, s.handleGetTrigger)
	h("POST /v1/triggers/{id}/ack", auth.VerbAck, s.handleAck)
	h("POST /v1/triggers/{id}/force", auth.VerbAdmin, s.handleForce)
	h("POST /v1/threads/{id}/unblock", auth.VerbAdmin, s.handleUnblock)
	h("GET /v1/events", auth.VerbRead, s.handleEvents)
	h("GET /v1/audit", auth.VerbRead, s.handleAudit)
	h("GET /v1/schedules", auth.VerbRead, s.handleListSchedules)
	h("POST /v1/schedules", auth.VerbTrigger, s.handleAddSchedule)
	h("DELETE /v1/schedules/{id}", auth.VerbTrigger, s.handleDeleteSchedule)
	h("GET /metrics", auth.VerbRead, func(w http.ResponseWriter, r *http.Request, _ auth.Caller) { s.handleMetrics(w, r) })
	h("POST /v1/tokens", auth.VerbAdmin, s.handleIssueToken)
	h("GET /v1/tokens", auth.VerbAdmin, s.handleListTokens)
	h("DELETE /v1/tokens/{id}", auth.VerbAdmin, s.handleRevokeToken)
	h("POST /v1/tokens/rotate-key", auth.VerbAdmin, s.handleRotateKey)
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

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	writeJSON(w, http.StatusOK, api.Health{OK: true, Version: s.cfg.Version, StartedAt: s.started, Runtimes: len(s.deps.Runtimes.List())})
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
