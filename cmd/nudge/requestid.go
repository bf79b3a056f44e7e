package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
)

// handleMetrics serves the Prometheus text format (on the socket and on --metrics-addr).
func (d *daemon) handleMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	if d.obs == nil {
		return
	}
	if err := d.obs.WritePrometheus(w); err != nil {
		d.log.Debug("write metrics", "err", err)
	}
}

// Request ids: every API request gets one (X-Request-Id, or a fresh random one), kept in
// its context and logged on trigger lines.

type requestIDKey struct{}

// withRequestID gives the request its id (X-Request-Id if sane, else a fresh one) and
// the time the daemon began handling it.
func withRequestID(r *http.Request, received time.Time) *http.Request {
	id := r.Header.Get("X-Request-Id")
	if id == "" || len(id) > 64 || strings.ContainsFunc(id, func(c rune) bool { return c <= ' ' || c > '~' }) {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id = "req_" + hex.EncodeToString(b[:])
	}
	ctx := context.WithValue(r.Context(), requestIDKey{}, requestInfo{id, received})
	return r.WithContext(ctx)
}

type requestInfo struct {
	id       string
	received time.Time
}

func requestReceived(ctx context.Context) time.Time {
	info, _ := ctx.Value(requestIDKey{}).(requestInfo)
	return info.received
}

func requestID(ctx context.Context) string {
	info, _ := ctx.Value(requestIDKey{}).(requestInfo)
	return info.id
}

// logTrigger writes the one info line per trigger request.
func (d *daemon) logTrigger(r *http.Request, t nudge.Trigger, created bool) {
	d.log.Info("trigger request", "request_id", requestID(r.Context()), "trigger_id", t.TriggerID,
		"thread_id", t.ThreadID, "agent_id", t.Agent, "runtime_id", t.RuntimeID, "workspace", t.WorkspaceID,
		"state", t.State, "result", t.Result, "error_code", t.ErrorCode, "fallback_used", t.Fallback != "",
		"created", created)
}
