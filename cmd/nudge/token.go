package main

// Orchestrator tokens: the signing key in the state dir, verification with the revocation
// list, and `nudge token issue|revoke|list|rotate-key` with their API routes.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
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

// runToken is `nudge token issue|revoke|list|rotate-key`.
func runToken(ctx context.Context, env *cliEnv, args []string) error {
	if len(args) == 0 {
		return usagef("want a subcommand: issue, revoke, list, rotate-key")
	}
	sub, args := args[0], args[1:]
	fs := newFlagSet("token", sub, env)
	o := addClientFlags(fs)
	var b issueBody
	if sub == "issue" {
		fs.StringVar(&b.Subject, "subject", "", "who the token is for (e.g. orchestrator)")
		fs.Var(listFlag{&b.Workspaces}, "workspace", "workspace it may touch (repeatable or comma-separated; * for all)")
		fs.Var(listFlag{&b.Verbs}, "verbs", "verbs: "+strings.Join(auth.Verbs, ","))
		fs.StringVar(&b.TTL, "ttl", auth.DefaultTokenTTL.String(), "lifetime")
	}
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ctx, cancel := shortCtx(ctx)
	defer cancel()
	c := o.client(env)
	switch {
	case sub == "issue" && fs.NArg() == 0:
		if b.Subject == "" || len(b.Workspaces) == 0 || len(b.Verbs) == 0 {
			return usagef("issue needs --subject, --workspace and --verbs")
		}
		var rep issueReply
		if err := c.do(ctx, "POST", "/v1/tokens", b, &rep); err != nil {
			return err
		}
		if *asJSON {
			return printJSON(env.stdout, rep)
		}
		fmt.Fprintln(env.stdout, rep.Token)
		fmt.Fprintf(env.stderr, "token %s for %s: verbs %s, workspaces %s, expires %s\n", rep.ID, rep.Subject,
			strings.Join(rep.Verbs, ","), strings.Join(rep.Workspaces, ","), rep.Expiry().Local().Format(time.RFC3339))
		return nil
	case sub == "revoke" && fs.NArg() == 1:
		return o.call(ctx, env, "DELETE", "/v1/tokens/"+url.PathEscape(fs.Arg(0)), nil)
	case sub == "rotate-key" && fs.NArg() == 0:
		return o.call(ctx, env, "POST", "/v1/tokens/rotate-key", nil)
	case sub == "list" && fs.NArg() == 0:
		var list []issuedToken
		if err := c.do(ctx, "GET", "/v1/tokens", nil, &list); err != nil {
			return err
		}
		if *asJSON {
			return printJSON(env.stdout, list)
		}
		tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSUBJECT\tWORKSPACES\tVERBS\tEXPIRES\tSTATE")
		for _, t := range list {
			state := "valid"
			switch {
			case t.Revoked:
				state = "revoked"
			case time.Now().After(t.Expiry()):
				state = "expired"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Subject, strings.Join(t.Workspaces, ","),
				strings.Join(t.Verbs, ","), t.Expiry().Local().Format(time.RFC3339), state)
		}
		return tw.Flush()
	}
	return usagef("usage: nudge token issue --subject S --workspace W --verbs V [--ttl D] | revoke ID | list | rotate-key")
}
