package main

// Orchestrator tokens: the signing key in the state dir, verification with the revocation
// list, and `nudge token issue|revoke|list|rotate-key` with their API routes.

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/auth"
)

// issuedToken is an entry of the issued-token index (never the token itself).
type issuedToken = auth.Issued

// issueBody is POST /v1/tokens.
type issueBody struct {
	Subject    string   `json:"subject"`
	Workspaces []string `json:"workspaces"`
	Verbs      []string `json:"verbs"`
	TTL        string   `json:"ttl"`
}

// issueReply is the answer: the token is shown once and stored nowhere.
type issueReply struct {
	Token string `json:"token"`
	issuedToken
}

func (d *daemon) handleIssueToken(w http.ResponseWriter, r *http.Request, c caller) {
	var b issueBody
	if err := decodeJSON(w, r, &b); err != nil {
		writeError(w, err)
		return
	}
	tok, it, err := d.auth.Issue(c, auth.IssueRequest{Subject: b.Subject, Workspaces: b.Workspaces, Verbs: b.Verbs, TTL: b.TTL})
	if err != nil {
		writeError(w, err)
		return
	}
	cl := it.Claims
	d.auditCall(r, c, "token_issued", "", auth.SingleWorkspace(cl.Workspaces), fmt.Sprintf("token %s for %s: verbs %s, workspaces %s, expires %s",
		cl.ID, cl.Subject, strings.Join(cl.Verbs, ","), strings.Join(cl.Workspaces, ","), cl.Expiry().UTC().Format(time.RFC3339)))
	writeJSON(w, http.StatusCreated, issueReply{Token: tok, issuedToken: it})
}

func (d *daemon) handleRevokeToken(w http.ResponseWriter, r *http.Request, c caller) {
	id := r.PathValue("id")
	it, err := d.auth.Revoke(c, id)
	if err != nil {
		writeError(w, err)
		return
	}
	d.auditCall(r, c, "token_revoked", "", auth.SingleWorkspace(it.Workspaces), "token "+id+" of "+it.Subject)
	writeJSON(w, http.StatusOK, it)
}

func (d *daemon) handleListTokens(w http.ResponseWriter, r *http.Request, c caller) {
	out, err := d.auth.List(c)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *daemon) handleRotateKey(w http.ResponseWriter, r *http.Request, c caller) {
	if err := d.auth.RotateKey(c); err != nil {
		writeError(w, err)
		return
	}
	d.auditCall(r, c, "token_key_rotated", "", "", "every token signed with the previous key is invalid")
	writeJSON(w, http.StatusOK, map[string]any{"rotated": true})
}

// tokenRoutes adds the /v1/tokens routes (all admin).
func (d *daemon) tokenRoutes(mux *http.ServeMux) {
	mux.Handle("POST /v1/tokens", d.guard(verbAdmin, d.handleIssueToken))
	mux.Handle("GET /v1/tokens", d.guard(verbAdmin, d.handleListTokens))
	mux.Handle("DELETE /v1/tokens/{id}", d.guard(verbAdmin, d.handleRevokeToken))
	mux.Handle("POST /v1/tokens/rotate-key", d.guard(verbAdmin, d.handleRotateKey))
}
