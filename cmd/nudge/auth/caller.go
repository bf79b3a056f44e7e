package auth

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
)

// Caller is an authenticated API client: who it is and what it may do. The server puts
// it in each request's context (WithCaller) once Authenticate accepted the request.
type Caller struct {
	Subject    string    // who: "uid:1000", "orchestrator#1a2b3c4d", "runtime:rt_ws.role#…"
	UID        int       // peer uid (-1 if unknown)
	Workspaces []string  // nil: all
	Verbs      []string  // nil: all
	RuntimeID  string    // set for a runtime's own token: it may act only on itself
	TokenID    string    // the token's id; "" without a token
	Expires    time.Time // the token's expiry; zero without a token
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller WithCaller put in ctx; ok is false if there is none (the
// request was not authenticated: refuse it).
func CallerFrom(ctx context.Context) (c Caller, ok bool) {
	c, ok = ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// Unrestricted reports whether c may do anything anywhere (the daemon's uid without a
// token, or the shared --api-token).
func (c Caller) Unrestricted() bool {
	return c.Verbs == nil && c.Workspaces == nil && c.RuntimeID == ""
}

// Allow checks a verb, and a workspace when ws is not empty. Any verb implies read.
func (c Caller) Allow(verb, ws string) error {
	if c.Verbs != nil && !slices.Contains(c.Verbs, verb) && !(verb == VerbRead && len(c.Verbs) > 0) {
		return nudge.NewError(nudge.Forbidden, c.Subject+" may not "+verb+" (token verbs: "+strings.Join(c.Verbs, ",")+
			"; use a token that holds it: `nudge token issue --verbs "+verb+"` by an admin)")
	}
	if ws != "" && c.Workspaces != nil && !slices.Contains(c.Workspaces, ws) {
		return nudge.NewError(nudge.Forbidden, c.Subject+" may not act on workspace "+strconv.Quote(ws)+
			" (token workspaces: "+strings.Join(c.Workspaces, ",")+"; use a token for it: `nudge token issue --workspace "+ws+"` by an admin)")
	}
	return nil
}

// AllowRuntime checks a verb on runtime id of workspace ws: a runtime token may act only
// on itself.
func (c Caller) AllowRuntime(verb, id, ws string) error {
	if c.RuntimeID != "" && c.RuntimeID != id && verb != VerbRead {
		return nudge.NewError(nudge.Forbidden, c.Subject+" may not act on runtime "+id+" (a runtime token acts only on its own runtime; use a workspace token)")
	}
	return c.Allow(verb, ws)
}

// AllowTrigger checks a verb on trigger id, sent to runtimeID of workspace ws: a runtime
// token covers only its own triggers.
func (c Caller) AllowTrigger(verb, id, runtimeID, ws string) error {
	if c.RuntimeID != "" && c.RuntimeID != runtimeID {
		return nudge.NewError(nudge.Forbidden, c.Subject+" may not act on trigger "+id+" (it belongs to another runtime; use a workspace token)")
	}
	return c.Allow(verb, ws)
}

// Covers reports whether c holds every verb and workspace of cl and outlives it: a caller
// may not issue a token broader than itself.
func (c Caller) Covers(cl Claims) error {
	if c.RuntimeID != "" {
		return nudge.NewError(nudge.Forbidden, "a runtime token cannot issue tokens (use an admin token, or the daemon's own user without one)")
	}
	for _, v := range cl.Verbs {
		if c.Verbs != nil && !slices.Contains(c.Verbs, v) {
			return nudge.NewError(nudge.Forbidden, c.Subject+" cannot grant verb "+v+" it does not hold")
		}
	}
	if c.Workspaces != nil {
		for _, w := range cl.Workspaces {
			if !slices.Contains(c.Workspaces, w) {
				return nudge.NewError(nudge.Forbidden, c.Subject+" cannot grant workspace "+w+" it does not hold")
			}
		}
	}
	if !c.Expires.IsZero() && cl.Expiry().After(c.Expires) {
		return nudge.NewError(nudge.Forbidden, c.Subject+" cannot issue a token that outlives its own ("+c.Expires.UTC().Format(time.RFC3339)+")")
	}
	return nil
}

// What a caller may read. Events, audit records and receipt lookups are filtered by the
// caller's workspaces; something outside them is answered exactly as something that
// does not exist, so a scoped token cannot even learn that an id is in use elsewhere.

// Sees reports whether c may read workspace ws. A record that belongs to no workspace
// (a daemon-wide alert, a refusal naming no runtime) is for unrestricted callers and
// tokens for all workspaces only.
func (c Caller) Sees(ws string) bool {
	if ws == "" {
		return c.Workspaces == nil && c.RuntimeID == ""
	}
	return c.Allow(VerbRead, ws) == nil
}

// WorkspaceOfRuntime is the workspace in a runtime id (rt_<ws>.<role>; a workspace name
// holds no dot), or "".
func WorkspaceOfRuntime(id string) string {
	rest, ok := strings.CutPrefix(id, "rt_")
	if !ok {
		return ""
	}
	ws, _, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	return ws
}
