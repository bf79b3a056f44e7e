package main

import (
	"crypto/subtle"
	"net/http"
	"os"
	"strings"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// Verbs a caller may be allowed.
const (
	verbRead      = "read"
	verbTrigger   = "trigger"
	verbAck       = "ack"
	verbHeartbeat = "heartbeat"
	verbSpawn     = "spawn"
	verbAdmin     = "admin"
)

// caller is an authenticated API client.
type caller struct {
	Subject    string   // who: "uid:1000", a token's subject, "runtime:<id>"
	UID        int      // peer uid (-1 if unknown)
	Workspaces []string // nil: all
	Verbs      []string // nil: all
	RuntimeID  string   // set for a runtime's own token: it may act only on itself
}

// authenticate checks the peer's uid (the socket is 0600 too) and, when configured, the
// shared secret.
func (d *daemon) authenticate(r *http.Request) (caller, error) {
	p := peerOf(r.Context())
	c := caller{UID: -1}
	if p.Known {
		c.UID = p.UID
		if p.UID != os.Geteuid() && !d.uidAllowed(p.UID) {
			return c, &apiError{nudge.Forbidden, "peer uid is not allowed to use this daemon"}
		}
		c.Subject = "uid:" + itoa(p.UID)
	}
	if d.cfg.Token != "" {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if subtle.ConstantTimeCompare([]byte(tok), []byte(d.cfg.Token)) != 1 {
			return c, &apiError{nudge.Unauthorized, "missing or wrong API token"}
		}
		c.Subject = "token"
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

// allow checks a verb, and a workspace when ws is not empty.
func (c caller) allow(verb, ws string) error {
	if c.Verbs != nil && !contains(c.Verbs, verb) && !(verb == verbRead && len(c.Verbs) > 0) {
		return &apiError{nudge.Forbidden, c.Subject + " may not " + verb}
	}
	if ws != "" && c.Workspaces != nil && !contains(c.Workspaces, ws) {
		return &apiError{nudge.Forbidden, c.Subject + " may not act on workspace " + ws}
	}
	return nil
}

// allowRuntime checks a verb on a runtime: a runtime token may act only on itself.
func (c caller) allowRuntime(verb string, rt store.Runtime) error {
	if c.RuntimeID != "" && c.RuntimeID != rt.RuntimeID && verb != verbRead {
		return &apiError{nudge.Forbidden, c.Subject + " may not act on runtime " + rt.RuntimeID}
	}
	return c.allow(verb, rt.WorkspaceID)
}

// allowTrigger checks a verb on a trigger: a runtime token covers only its own triggers.
func (c caller) allowTrigger(verb string, t store.Trigger) error {
	if c.RuntimeID != "" && c.RuntimeID != t.RuntimeID {
		return &apiError{nudge.Forbidden, c.Subject + " may not act on trigger " + t.TriggerID}
	}
	return c.allow(verb, t.WorkspaceID)
}

// revokeRuntime invalidates a runtime's tokens (deregistration).
func (d *daemon) revokeRuntime(id string) {}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
