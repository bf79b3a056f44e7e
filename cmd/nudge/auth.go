package main

// Who may call the API, and what they may do (SECURITY.md).
//
// 1. The kernel: the socket is 0600 in a 0700 directory, so only the daemon's uid (and
//    root) can connect at all.
// 2. Peer credentials (SO_PEERCRED): a peer uid other than the daemon's is refused unless
//    `serve --allow-uid` names it; such a peer must also present a token.
// 3. Bearer tokens (auth.Claims, HMAC-SHA256 with the key in the state dir): a subject,
//    workspaces, verbs, an expiry and an id; revoked ids are refused on every request.
//    Runtime tokens (put in a spawned pane's environment) carry one runtime id and its
//    registration epoch, and stop working when the runtime is deregistered.
// 4. No token from the daemon's own uid: full access, unless `serve --require-token`.

import (
	"crypto/subtle"
	"errors"
	"flag"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
)

// Verbs a caller may be allowed.
const (
	verbRead      = auth.VerbRead
	verbTrigger   = auth.VerbTrigger
	verbAck       = auth.VerbAck
	verbHeartbeat = auth.VerbHeartbeat
	verbSpawn     = auth.VerbSpawn
	verbAdmin     = auth.VerbAdmin
)

// authConfig is the security part of serveConfig (embedded there).
type authConfig struct {
	RequireToken    bool          // refuse tokenless requests even from the daemon's uid
	PolicyFile      string        // workspace policy (policy.go); "" means none
	RuntimeTokenTTL time.Duration // lifetime of a runtime token; renewed at half-life
}

func authFlags(fs *flag.FlagSet, c *serveConfig) {
	fs.BoolVar(&c.RequireToken, "require-token", false, "refuse requests without a token, even from the daemon's own uid")
	fs.StringVar(&c.PolicyFile, "policy", "", "workspace policy JSON file (spawn dirs, profiles, launchers, rate limits)")
	fs.DurationVar(&c.RuntimeTokenTTL, "runtime-token-ttl", defaultRuntimeTokenTTL, "lifetime of the token put in a spawned runtime's environment (renewed at half-life)")
	fs.Func("allow-uid", "also accept connections from this uid (repeatable); it must present a token", func(s string) error {
		uid, err := strconv.Atoi(s)
		if err != nil || uid < 0 {
			return errors.New("want a numeric uid")
		}
		c.AllowUIDs = append(c.AllowUIDs, uid)
		return nil
	})
}

// caller is an authenticated API client.
type caller struct {
	Subject    string    // who: "uid:1000", "orchestrator#1a2b3c4d", "runtime:rt_ws.role#…"
	UID        int       // peer uid (-1 if unknown)
	Workspaces []string  // nil: all
	Verbs      []string  // nil: all
	RuntimeID  string    // set for a runtime's own token: it may act only on itself
	TokenID    string    // the token's id; "" without a token
	Expires    time.Time // the token's expiry; zero without a token
}

// unrestricted reports whether c may do anything anywhere (the daemon's uid without a
// token, or the legacy --api-token).
func (c caller) unrestricted() bool {
	return c.Verbs == nil && c.Workspaces == nil && c.RuntimeID == ""
}

// authenticate checks the peer's uid, then the bearer token if there is one.
func (d *daemon) authenticate(r *http.Request) (caller, error) {
	p := peerOf(r.Context())
	c := caller{UID: -1}
	if !p.Known {
		return c, &apiError{nudge.Forbidden, "peer credentials unavailable: refusing the connection"}
	}
	c.UID = p.UID
	own := p.UID == os.Geteuid()
	if !own && !d.uidAllowed(p.UID) {
		return c, &apiError{nudge.Forbidden, "peer uid " + itoa(p.UID) + " is not allowed to use this daemon (serve --allow-uid)"}
	}
	c.Subject = "uid:" + itoa(p.UID)
	h := r.Header.Get("Authorization")
	if h == "" {
		if own && !d.cfg.RequireToken && d.cfg.Token == "" {
			return c, nil
		}
		return c, &apiError{nudge.Unauthorized, "a token is required: send Authorization: Bearer <token> (nudge --token, $NUDGE_TOKEN)"}
	}
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || tok == "" {
		return c, &apiError{nudge.Unauthorized, "the Authorization header must be 'Bearer <token>'"}
	}
	if d.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(d.cfg.Token)) == 1 {
		c.Subject = "api-token"
		return c, nil
	}
	cl, err := d.auth.verify(tok)
	if err != nil {
		return c, err
	}
	c.Subject = cl.Subject + "#" + cl.ID[:8]
	c.Verbs, c.RuntimeID, c.TokenID, c.Expires = cl.Verbs, cl.RuntimeID, cl.ID, cl.Expiry()
	if !cl.AllWorkspaces() {
		c.Workspaces = cl.Workspaces
	}
	return c, nil
}

func (d *daemon) uidAllowed(uid int) bool {
	for _, u := range d.cfg.AllowUIDs {
		if u == uid {
			return true
		}
	}
	return false
}

// allow checks a verb, and a workspace when ws is not empty. Any verb implies read.
func (c caller) allow(verb, ws string) error {
	if c.Verbs != nil && !contains(c.Verbs, verb) && !(verb == verbRead && len(c.Verbs) > 0) {
		return &apiError{nudge.Forbidden, c.Subject + " may not " + verb + " (token verbs: " + strings.Join(c.Verbs, ",") + ")"}
	}
	if ws != "" && c.Workspaces != nil && !contains(c.Workspaces, ws) {
		return &apiError{nudge.Forbidden, c.Subject + " may not act on workspace " + strconv.Quote(ws)}
	}
	return nil
}

// allowRuntime checks a verb on a runtime: a runtime token may act only on itself.
func (c caller) allowRuntime(verb string, rt nudge.Runtime) error {
	if c.RuntimeID != "" && c.RuntimeID != rt.RuntimeID && verb != verbRead {
		return &apiError{nudge.Forbidden, c.Subject + " may not act on runtime " + rt.RuntimeID}
	}
	return c.allow(verb, rt.WorkspaceID)
}

// allowTrigger checks a verb on a trigger: a runtime token covers only its own triggers.
func (c caller) allowTrigger(verb string, t nudge.Trigger) error {
	if c.RuntimeID != "" && c.RuntimeID != t.RuntimeID {
		return &apiError{nudge.Forbidden, c.Subject + " may not act on trigger " + t.TriggerID + " (it belongs to another runtime)"}
	}
	return c.allow(verb, t.WorkspaceID)
}

// covers reports whether c holds every verb and workspace of cl and outlives it: a
// caller may not issue a token broader than itself.
func (c caller) covers(cl auth.Claims) error {
	if c.RuntimeID != "" {
		return &apiError{nudge.Forbidden, "a runtime token cannot issue tokens"}
	}
	for _, v := range cl.Verbs {
		if c.Verbs != nil && !contains(c.Verbs, v) {
			return &apiError{nudge.Forbidden, c.Subject + " cannot grant verb " + v + " it does not hold"}
		}
	}
	if c.Workspaces != nil {
		for _, w := range cl.Workspaces {
			if !contains(c.Workspaces, w) {
				return &apiError{nudge.Forbidden, c.Subject + " cannot grant workspace " + w + " it does not hold"}
			}
		}
	}
	if !c.Expires.IsZero() && cl.Expiry().After(c.Expires) {
		return &apiError{nudge.Forbidden, c.Subject + " cannot issue a token that outlives its own (" + c.Expires.UTC().Format(time.RFC3339) + ")"}
	}
	return nil
}

// revokeRuntime invalidates a runtime's tokens (deregistration): its epoch is deleted, so
// every token minted for it fails on the next request.
func (d *daemon) revokeRuntime(id string) {
	if d.auth != nil {
		d.auth.revokeRuntime(d, id)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func itoa(n int) string { return strconv.Itoa(n) }

// auditRefusal records a refused mutating call (reads are not audited): who was refused,
// from which uid, and why.
func (d *daemon) auditRefusal(r *http.Request, c caller, err error) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return
	}
	ae := toAPIError(err)
	uid := c.UID
	rec := nudge.AuditRecord{Event: "api_refused", Subject: c.Subject, PeerUID: &uid, Code: ae.ErrorCode,
		Reason: r.Method + " " + r.URL.EscapedPath() + ": " + ae.Message}
	if _, err := d.db.AppendAudit(rec); err != nil {
		d.log.Error("audit", "event", rec.Event, "err", err)
	}
}
