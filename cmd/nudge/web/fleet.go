package web

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// The fleet page's cards come from package view, as `nudge watch`'s rows do: one place
// turns runtimes, triggers and dialogs into a state word, badges, a queue and a last
// receipt, and the browser draws what it is given.

// handleFleet is GET /api/v1/fleet: a card (view.Card) for every runtime this browser's
// token may see, by workspace then role. It reads through the API's own handlers with
// the request's bearer token, so it sees what GET /v1/runtimes and GET /v1/triggers
// would show this token and nothing more: the runtimes, the open triggers, and each
// runtime's newest trigger (one small read each, as nudge watch's snapshot does).
func (s *Server) handleFleet(w http.ResponseWriter, r *http.Request) {
	f, ok := s.readFleet(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, f.Cards())
}

// apiGet runs GET path through the API's handlers as r's caller and decodes its answer
// into out. An answer that is not 200 is handed to w as it is, and apiGet reports false.
func (s *Server) apiGet(w http.ResponseWriter, r *http.Request, path string, out any) bool {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, path, nil)
	if err != nil {
		fail(w, err)
		return false
	}
	req.Header.Set("Authorization", r.Header.Get("Authorization"))
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	s.deps.API.ServeHTTP(rec, req)
	if rec.status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body.Bytes())
		return false
	}
	if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
		fail(w, err)
		return false
	}
	return true
}

// recorder is the ResponseWriter of an in-process API call.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
