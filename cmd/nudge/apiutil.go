package main

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/server"
)

// apiError is the JSON error body as the client reads it: {error_code, message}.
type apiError struct {
	ErrorCode nudge.Code `json:"error_code"`
	Message   string     `json:"message"`
}

func (e *apiError) Error() string { return string(e.ErrorCode) + ": " + e.Message }

// writeError answers a request of the event hub's with the JSON error body.
func writeError(w http.ResponseWriter, err error) {
	ae := server.ToAPIError(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(server.StatusFor(ae.ErrorCode))
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(ae)
}

func badRequest(format string, args ...any) error {
	return nudge.NewError(nudge.BadRequest, fmt.Sprintf(format, args...))
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
