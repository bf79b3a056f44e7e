package main

// Orchestrator tokens: the signing key in the state dir, verification with the revocation
// list, and `nudge token issue|revoke|list|rotate-key` with their API routes.

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/auth"
)

// issuedToken is an entry of the issued-token index (never the token itself).
type issuedToken = auth.Issued

// issueReply is the answer: the token is shown once and stored nowhere.
type issueReply struct {
	Token string `json:"token"`
	issuedToken
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
