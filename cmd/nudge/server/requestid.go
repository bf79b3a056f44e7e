package server

// Request ids: every API request gets one (X-Request-Id, or a fresh random one), kept in
// its context, logged on trigger lines and with internal errors, and named in an
// internal error's answer.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
)

type requestIDKey struct{}

type requestInfo struct {
	id       string
	received time.Time
}

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

// Received is when the server began handling the request of ctx (zero outside one).
func Received(ctx context.Context) time.Time {
	info, _ := ctx.Value(requestIDKey{}).(requestInfo)
	return info.received
}

// RequestID is the id of the request of ctx ("" outside one).
func RequestID(ctx context.Context) string {
	info, _ := ctx.Value(requestIDKey{}).(requestInfo)
	return info.id
}
