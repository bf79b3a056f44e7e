package web

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
)

// Scopes a device may be paired with, and the verbs each gives. Pause and resume are
// the API's admin verb: only "operate" and "type" hold it (and the web view reaches none
// of the other admin routes: APIRoutes). Typing into a pane's terminal is the type verb,
// held by the "type" scope alone: keys reach the agent past every gate a trigger or an
// answer passes, so it is the broadest scope and never implied by another.
var Scopes = map[string][]string{
	"read":    {auth.VerbRead},
	"answer":  {auth.VerbRead, auth.VerbAnswer},
	"trigger": {auth.VerbRead, auth.VerbAnswer, auth.VerbTrigger},
	"operate": {auth.VerbRead, auth.VerbAnswer, auth.VerbTrigger, auth.VerbAdmin},
	"type":    {auth.VerbRead, auth.VerbAnswer, auth.VerbTrigger, auth.VerbAdmin, auth.VerbType},
}

// DefaultDeviceTTL is a device token's lifetime when the pairing names none.
const DefaultDeviceTTL = 30 * 24 * time.Hour

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,40}$`)

// pending is a pairing not yet redeemed: who asked (the token is issued on their behalf,
// so it can never be broader than they are) and what for.
type pending struct {
	by      auth.Caller
	req     auth.IssueRequest
	expires time.Time
}

// pairings holds the pending pairings by the SHA-256 of their code (the code itself is
// kept nowhere).
type pairings struct {
	mu  sync.Mutex
	m   map[[32]byte]pending
	max int
	ttl time.Duration
	now func() time.Time
}

func newPairings(max int, ttl time.Duration, now func() time.Time) *pairings {
	return &pairings{m: map[[32]byte]pending{}, max: max, ttl: ttl, now: now}
}

// Pair makes a pairing link for c (an admin of the socket API): the first browser that
// opens it (before it expires) gets a device token. The code is in the link's fragment,
// which browsers never send to a server; the page posts it once and forgets it. The device token is
// checked against c now (c.Covers) and issued on c's behalf when the link is opened.
func (s *Server) Pair(c auth.Caller, req api.WebPairRequest) (api.WebPairing, error) {
	if req.Name == "" {
		req.Name = "browser"
	}
	if req.Scope == "" {
		req.Scope = "read"
	}
	verbs, ok := Scopes[req.Scope]
	switch {
	case !nameRE.MatchString(req.Name):
		return api.WebPairing{}, nudge.NewError(nudge.BadRequest, "name "+req.Name+": want 1 to 40 of A-Z a-z 0-9 _ . -")
	case !ok:
		return api.WebPairing{}, nudge.NewError(nudge.BadRequest, "scope "+req.Scope+": want read, answer, trigger, operate or type")
	}
	ws := req.Workspaces
	if len(ws) == 0 {
		ws = c.Workspaces
	}
	if ws == nil {
		ws = []string{auth.AllWorkspaces}
	}
	if req.TTL == "" {
		req.TTL = DefaultDeviceTTL.String()
	}
	ttl, err := time.ParseDuration(req.TTL)
	if err != nil || ttl <= 0 || ttl > auth.MaxTokenTTL {
		return api.WebPairing{}, nudge.NewError(nudge.BadRequest, "ttl "+req.TTL+": want a positive Go duration up to "+auth.MaxTokenTTL.String())
	}
	now := s.cfg.Now()
	cl := auth.Claims{Workspaces: ws, Verbs: verbs, ExpiresAt: now.Add(s.cfg.PairTTL + ttl).Unix()}
	if err := c.Covers(cl); err != nil {
		return api.WebPairing{}, err
	}
	ir := auth.IssueRequest{Subject: DeviceSubjectPrefix + req.Name, Workspaces: slices.Clone(ws), Verbs: slices.Clone(verbs), TTL: req.TTL}
	code, exp, err := s.pairs.add(pending{by: c, req: ir})
	if err != nil {
		return api.WebPairing{}, err
	}
	return api.WebPairing{URL: s.URL() + "/pair#" + code, ExpiresAt: exp, Subject: ir.Subject, Scope: req.Scope,
		Verbs: ir.Verbs, Workspaces: ir.Workspaces, TTL: req.TTL}, nil
}

// add keeps p under a new code and returns the code.
func (ps *pairings) add(p pending) (string, time.Time, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", time.Time{}, err
	}
	code := base64.RawURLEncoding.EncodeToString(raw[:])
	ps.mu.Lock()
	defer ps.mu.Unlock()
	now := ps.now()
	for k, v := range ps.m {
		if !now.Before(v.expires) {
			delete(ps.m, k)
		}
	}
	if len(ps.m) >= ps.max {
		return "", time.Time{}, nudge.NewError(nudge.Unavailable, "too many pairing links not yet opened: wait until they expire")
	}
	p.expires = now.Add(ps.ttl)
	ps.m[sha256.Sum256([]byte(code))] = p
	return code, p.expires, nil
}

// take removes the pairing of code and returns it; ok is false if there is none or it
// expired. A code works once, whatever happens next.
func (ps *pairings) take(code string) (pending, bool) {
	if len(code) != 43 {
		return pending{}, false
	}
	k := sha256.Sum256([]byte(code))
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.m[k]
	delete(ps.m, k)
	return p, ok && ps.now().Before(p.expires)
}
