package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"syscall"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/store"
)

// StatusFor maps a failure code to an HTTP status.
func StatusFor(code nudge.Code) int {
	switch code {
	case nudge.BadRequest, nudge.PayloadRejected:
		return http.StatusBadRequest
	case nudge.Unauthorized:
		return http.StatusUnauthorized
	case nudge.Forbidden:
		return http.StatusForbidden
	case nudge.NotFound, nudge.TargetNotFound:
		return http.StatusNotFound
	case nudge.Conflict, nudge.IdempotencyConflict, nudge.DialogChanged, nudge.DialogAnswered, nudge.NoDialog, nudge.OperatorBusy:
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

// ToAPIError turns an error into the JSON error body. An error that carries no code of
// nudge's is Internal, with its own text (which the server logs and never sends).
func ToAPIError(err error) *api.Error {
	var ae *api.Error
	var ne *nudge.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &ne):
		return &api.Error{ErrorCode: ne.Code, Message: ne.Message}
	case errors.Is(err, store.ErrNotFound):
		return &api.Error{ErrorCode: nudge.NotFound, Message: err.Error()}
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return &api.Error{ErrorCode: nudge.Unavailable, Message: err.Error()}
	default:
		return &api.Error{ErrorCode: nudge.Internal, Message: err.Error()}
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// fail answers r with err. An internal error's text is logged with the request id and
// replaced by "internal error (request <id>)" in the answer.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	ae := ToAPIError(err)
	if ae.ErrorCode == nudge.Internal {
		id := RequestID(r.Context())
		s.log.Error("internal error", "request_id", id, "method", r.Method, "path", r.URL.Path, "err", err)
		ae = &api.Error{ErrorCode: nudge.Internal, Message: "internal error (request " + id + ")"}
	}
	writeJSON(w, StatusFor(ae.ErrorCode), ae)
}

func badRequest(format string, args ...any) error {
	return &api.Error{ErrorCode: nudge.BadRequest, Message: fmt.Sprintf(format, args...)}
}

// decode reads one JSON object into v: unknown fields, trailing data and oversize bodies
// are errors.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) error {
	if err := auth.DecodeJSON(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody), v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &api.Error{ErrorCode: nudge.PayloadRejected, Message: fmt.Sprintf("request body over %d bytes", mbe.Limit)}
		}
		return badRequest("malformed JSON: %v", err)
	}
	return nil
}

// decodeOptional is decode for a body that may be absent.
func (s *Server) decodeOptional(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	return s.decode(w, r, v)
}
