package server

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
)

func (a tokensAPI) handleIssueToken(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	var b api.TokenRequest
	if err := s.decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	tok, it, err := s.deps.Tokens.Issue(c, auth.IssueRequest{Subject: b.Subject, Workspaces: b.Workspaces, Verbs: b.Verbs, TTL: b.TTL})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cl := it.Claims
	s.auditCall(r, c, "token_issued", "", auth.SingleWorkspace(cl.Workspaces), fmt.Sprintf("token %s for %s: verbs %s, workspaces %s, expires %s",
		cl.ID, cl.Subject, strings.Join(cl.Verbs, ","), strings.Join(cl.Workspaces, ","), cl.Expiry().UTC().Format(time.RFC3339)))
	writeJSON(w, http.StatusCreated, newToken{Token: tok, Issued: it})
}

func (a tokensAPI) handleRevokeToken(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	id := r.PathValue("id")
	it, err := s.deps.Tokens.Revoke(c, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.auditCall(r, c, "token_revoked", "", auth.SingleWorkspace(it.Workspaces), "token "+id+" of "+it.Subject)
	writeJSON(w, http.StatusOK, it)
}

func (a tokensAPI) handleListTokens(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	out, err := s.deps.Tokens.List(c)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (a tokensAPI) handleRotateKey(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	if err := s.deps.Tokens.RotateKey(c); err != nil {
		s.fail(w, r, err)
		return
	}
	s.auditCall(r, c, "token_key_rotated", "", "", "every token signed with the previous key is invalid")
	writeJSON(w, http.StatusOK, api.KeyRotated{Rotated: true})
}

// newToken is the answer to POST /v1/tokens: the token, shown once and stored nowhere,
// and its index entry.
type newToken struct {
	Token string `json:"token"`
	auth.Issued
}

// handleWebPair is POST /v1/web/pair: a one-time link that pairs a browser with the web
// view, its device token issued on the caller's behalf (never broader than the caller).
func (a tokensAPI) handleWebPair(w http.ResponseWriter, r *http.Request, c auth.Caller) {
	s := a.s
	if s.deps.Web == nil {
		s.fail(w, r, &api.Error{ErrorCode: nudge.Unavailable, Message: "the web view is off: start the daemon with nudge serve --web 127.0.0.1:8088"})
		return
	}
	var b api.WebPairRequest
	if err := s.decodeOptional(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := s.deps.Web.Pair(c, b)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.auditCall(r, c, "web_pairing_created", "", auth.SingleWorkspace(p.Workspaces), fmt.Sprintf("link for %s: verbs %s, workspaces %s, link expires %s",
		p.Subject, strings.Join(p.Verbs, ","), strings.Join(p.Workspaces, ","), p.ExpiresAt.UTC().Format(time.RFC3339)))
	writeJSON(w, http.StatusCreated, p)
}
