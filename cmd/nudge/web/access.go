package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/cmd/nudge/server"
)

// CookieName is the device token's cookie.
const CookieName = "nudge_device"

// APIRoutes are the socket API's routes the app reaches, under /api; nothing else is
// (tokens, spawn, stop, force, schedules, audit stay on the socket).
var APIRoutes = []string{
	"GET /v1/runtimes",
	"GET /v1/runtimes/{id}",
	"POST /v1/runtimes/{id}/answer",
	"POST /v1/runtimes/{id}/pause",
	"POST /v1/runtimes/{id}/resume",
	"GET /v1/triggers",
	"GET /v1/triggers/{id}",
	"POST /v1/triggers", // never with force_override (noForce)
	"GET /v1/events",
}

// Handler is the app: its pages and assets, pairing, and /api.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", assetHandler())
	mux.HandleFunc("POST /pair", s.handlePair)
	mux.HandleFunc("POST /unpair", s.handleUnpair)
	api := http.NewServeMux()
	for _, p := range APIRoutes {
		h := s.deps.API
		switch p {
		case "POST /v1/triggers":
			h = noForce(h)
		case "GET /v1/events":
			h = s.withCards(h)
		}
		api.Handle(p, h)
	}
	api.HandleFunc("GET /v1/whoami", s.handleWhoami)
	api.HandleFunc("GET /v1/fleet", s.handleFleet)
	api.HandleFunc("GET /v1/push", s.handlePushInfo)
	api.HandleFunc("POST /v1/push/subscribe", s.handleSubscribe)
	api.HandleFunc("GET /v1/runtimes/{id}/terminal", s.handleTerminal)
	api.HandleFunc("POST /v1/runtimes/{id}/keys", s.handleKeys)
	api.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, nudge.NewError(nudge.NotFound, "no such endpoint in the web view: "+r.Method+" "+r.URL.Path))
	})
	mux.Handle("/api/", http.StripPrefix("/api", s.device(api)))
	return s.headers(mux)
}

// headers sets what every answer carries and refuses a Host that is not this server's.
func (s *Server) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; manifest-src 'self'; worker-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if !s.hostAllowed(r.Host) {
			fail(w, nudge.NewError(nudge.Forbidden, "host "+r.Host+" is not this web view's (add it with --web-origin)"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed refuses, on a loopback address, a Host that is not a loopback name or one
// of Origins: a page of another site whose name was made to resolve to 127.0.0.1 (DNS
// rebinding) is answered nothing.
func (s *Server) hostAllowed(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if ah, _, err := net.SplitHostPort(s.cfg.Addr); err != nil || !Loopback(ah) {
		return true // the operator named a reachable address: its names are theirs
	}
	if Loopback(strings.Trim(host, "[]")) {
		return true
	}
	for _, o := range s.cfg.Origins {
		if u, err := url.Parse(o); err == nil && (strings.EqualFold(u.Host, hostport) || strings.EqualFold(u.Hostname(), host)) {
			return true
		}
	}
	return false
}

// originAllowed reports whether a state-changing request comes from a page of this
// server: an Origin (required) that is this request's own scheme and host, or one of
// Config.Origins; a Sec-Fetch-Site, when the browser sends one, of same-origin.
func (s *Server) originAllowed(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return false
	}
	u, err := parseOrigin(o)
	if err != nil {
		return false
	}
	for _, a := range s.cfg.Origins {
		if strings.EqualFold(strings.TrimRight(a, "/"), u.Scheme+"://"+u.Host) {
			return true
		}
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return u.Scheme == scheme && strings.EqualFold(u.Host, r.Host)
}

// parseOrigin reads scheme://host[:port] with nothing after it.
func parseOrigin(o string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(o, "/"))
	switch {
	case err != nil:
		return nil, err
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.Path != "", u.RawQuery != "", u.User != nil:
		return nil, errors.New("want scheme://host[:port]")
	}
	return u, nil
}

// maxTriggerBody bounds a trigger request read by noForce (the API's own limit is 1 MiB).
const maxTriggerBody = 1 << 20

// noForce refuses a trigger that asks to be typed over a human's draft
// (force_override): the web view never does that. The body is read with the API's own
// strict decoder, so the API cannot read another request from the same bytes.
func noForce(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxTriggerBody))
		if err != nil {
			fail(w, nudge.NewError(nudge.PayloadRejected, "trigger request too large"))
			return
		}
		var b api.TriggerRequest
		if auth.DecodeJSON(bytes.NewReader(body), &b) == nil && (b.ForceOverride || b.OverrideIntent != "") {
			fail(w, nudge.NewError(nudge.Forbidden, "the web view never types over a human's draft: force_override is the CLI's (nudge trigger --force)"))
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		next.ServeHTTP(w, r)
	})
}

type deviceKey struct{}

// device authenticates an /api request by its cookie, refuses a state-changing one from
// another origin, and hands it on with the token as its bearer (the API's handlers check
// the verbs, with the same rules and audit as on the socket).
func (s *Server) device(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !s.originAllowed(r) {
			fail(w, nudge.NewError(nudge.Forbidden, "cross-site request refused (Origin "+r.Header.Get("Origin")+")"))
			return
		}
		ck, err := r.Cookie(CookieName)
		if err != nil || ck.Value == "" {
			fail(w, nudge.NewError(nudge.Unauthorized, "this browser is not paired (nudge web pair)"))
			return
		}
		c, err := TokenAuthenticator{s.deps.Tokens}.Authenticate(auth.Peer{}, "Bearer "+ck.Value)
		if err != nil {
			fail(w, err)
			return
		}
		r = r.Clone(context.WithValue(r.Context(), deviceKey{}, c))
		r.Header.Set("Authorization", "Bearer "+ck.Value)
		r.Header.Del("Cookie") // the API sees the bearer only
		if strings.HasSuffix(r.URL.Path, "/events") || strings.HasSuffix(r.URL.Path, "/terminal") {
			ctx, stop := s.watchToken(r.Context(), ck.Value)
			defer stop()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// watchToken checks tok every TokenCheck while a stream is open: the context it returns
// ends when tok is refused (revoked, expired). stop ends the check and waits for it.
func (s *Server) watchToken(parent context.Context, tok string) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(done)
		t := time.NewTicker(s.cfg.TokenCheck)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := s.deps.Tokens.AuthenticateToken(tok); err != nil {
					cancel()
					return
				}
			}
		}
	}()
	return ctx, func() { cancel(); <-done }
}

// caller is the device that made r (set by device).
func caller(r *http.Request) auth.Caller {
	c, _ := r.Context().Value(deviceKey{}).(auth.Caller)
	return c
}

// Whoami is GET /api/v1/whoami: what this browser's token may do.
type Whoami struct {
	Subject    string    `json:"subject"`
	TokenID    string    `json:"token_id"`
	Verbs      []string  `json:"verbs"`
	Workspaces []string  `json:"workspaces"` // nil: all
	Expires    time.Time `json:"expires"`
	Terminal   bool      `json:"terminal"` // the daemon serves a terminal view
	Typing     bool      `json:"typing"`   // and this device may switch typing into it on
}

func (s *Server) handleWhoami(w http.ResponseWriter, r *http.Request) {
	c := caller(r)
	writeJSON(w, http.StatusOK, Whoami{Subject: c.Subject, TokenID: c.TokenID, Verbs: c.Verbs, Workspaces: c.Workspaces,
		Expires: c.Expires, Terminal: s.deps.Terminal != nil, Typing: s.deps.Terminal != nil && s.deps.Keys != nil && mayType(c)})
}

// handlePair is POST /pair {code}: it redeems a pairing link once, issues the device
// token and sets it as this browser's cookie.
func (s *Server) handlePair(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if !s.originAllowed(r) {
		fail(w, nudge.NewError(nudge.Forbidden, "cross-site request refused"))
		return
	}
	var b struct {
		Code string `json:"code"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1024)).Decode(&b); err != nil {
		fail(w, nudge.NewError(nudge.BadRequest, "want {\"code\": ...}"))
		return
	}
	p, ok := s.pairs.take(b.Code)
	if !ok {
		fail(w, nudge.NewError(nudge.Unauthorized, "this pairing link is unknown, used already or expired: run nudge web pair again"))
		return
	}
	tok, it, err := s.deps.Tokens.Issue(p.by, p.req)
	if err != nil {
		fail(w, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || strings.HasPrefix(r.Header.Get("Origin"), "https:"), Expires: it.Expiry(),
		MaxAge: int(time.Until(it.Expiry()).Seconds())})
	if s.deps.Audit != nil {
		uid := -1
		s.deps.Audit(nudge.AuditRecord{Event: "token_issued", Subject: p.by.Subject, PeerUID: &uid, Workspace: auth.SingleWorkspace(it.Workspaces),
			Reason: fmt.Sprintf("web pairing redeemed: token %s for %s: verbs %s, workspaces %s, expires %s", it.ID, it.Subject,
				strings.Join(it.Verbs, ","), strings.Join(it.Workspaces, ","), it.Expiry().UTC().Format(time.RFC3339))})
	}
	s.log.Info("web device paired", "token_id", it.ID, "subject", it.Subject, "verbs", strings.Join(it.Verbs, ","), "by", p.by.Subject)
	writeJSON(w, http.StatusOK, map[string]any{"subject": it.Subject, "token_id": it.ID, "verbs": it.Verbs, "expires": it.Expiry()})
}

// handleUnpair is POST /unpair: the browser forgets its cookie (the token stays valid
// until `nudge token revoke`).
func (s *Server) handleUnpair(w http.ResponseWriter, r *http.Request) {
	if !s.originAllowed(r) {
		fail(w, nudge.NewError(nudge.Forbidden, "cross-site request refused"))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// fail answers err as the API does: {error_code, message} with its status.
func fail(w http.ResponseWriter, err error) {
	var ne *nudge.Error
	if !errors.As(err, &ne) {
		ne = nudge.NewError(nudge.Internal, "internal error")
	}
	writeJSON(w, server.StatusFor(ne.Code), map[string]string{"error_code": string(ne.Code), "message": ne.Message})
}
