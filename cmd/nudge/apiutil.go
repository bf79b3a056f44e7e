package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/store"
)

// maxBody bounds every request body. A prompt is limited separately (64 KiB default).
const maxBody = 1 << 20

// apiError is the JSON error body: {error_code, message}.
type apiError struct {
	ErrorCode nudge.Code `json:"error_code"`
	Message   string     `json:"message"`
}

func (e *apiError) Error() string { return string(e.ErrorCode) + ": " + e.Message }

// statusFor maps a failure code to an HTTP status.
func statusFor(code nudge.Code) int {
	switch code {
	case nudge.BadRequest, nudge.PayloadRejected:
		return http.StatusBadRequest
	case nudge.Unauthorized:
		return http.StatusUnauthorized
	case nudge.Forbidden:
		return http.StatusForbidden
	case nudge.NotFound, nudge.TargetNotFound:
		return http.StatusNotFound
	case nudge.Conflict:
		return http.StatusConflict
	case nudge.EventsExpired:
		return http.StatusGone
	case nudge.TriggerRateLimited:
		return http.StatusTooManyRequests
	case nudge.UnmanagedRuntime, nudge.PaneDead, nudge.RegistryDrift:
		return http.StatusConflict
	case nudge.Unavailable, nudge.HostUnreachable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// toAPIError turns any error into the JSON error form.
func toAPIError(err error) *apiError {
	var ae *apiError
	var ne *nudge.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &ne):
		return &apiError{ne.Code, ne.Message}
	case errors.Is(err, store.ErrNotFound):
		return &apiError{nudge.NotFound, err.Error()}
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return &apiError{nudge.Unavailable, err.Error()}
	default:
		return &apiError{nudge.Internal, err.Error()}
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	ae := toAPIError(err)
	writeJSON(w, statusFor(ae.ErrorCode), ae)
}

func badRequest(format string, args ...any) error {
	return &apiError{nudge.BadRequest, fmt.Sprintf(format, args...)}
}

// decodeJSON reads one JSON object into v: unknown fields, trailing data and oversize
// bodies are errors.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if err := auth.DecodeJSON(http.MaxBytesReader(w, r.Body, maxBody), v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{nudge.PayloadRejected, fmt.Sprintf("request body over %d bytes", mbe.Limit)}
		}
		return badRequest("malformed JSON: %v", err)
	}
	return nil
}

// peer is who is on the other end of a unix-socket connection.
type peer struct {
	UID, PID int
	Known    bool
}

type peerKey struct{}

// connContext stores the peer credentials of a unix connection in the request context.
func connContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return ctx
	}
	return context.WithValue(ctx, peerKey{}, peer{UID: int(cred.Uid), PID: int(cred.Pid), Known: true})
}

func peerOf(ctx context.Context) peer {
	p, _ := ctx.Value(peerKey{}).(peer)
	return p
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
