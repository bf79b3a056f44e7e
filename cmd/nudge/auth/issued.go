package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// Issued is an entry of the issued-token index (never the token itself). Its JSON is
// both what the store keeps and what the API shows.
type Issued struct {
	Claims
	Revoked   bool      `json:"revoked,omitempty"`
	RevokedAt time.Time `json:"revoked_at,omitempty"`
	IssuedBy  string    `json:"issued_by"`
}

// IssueRequest asks for a token: who for, which workspaces and verbs, and a lifetime (a Go
// duration; "" is DefaultTokenTTL).
type IssueRequest struct {
	Subject    string
	Workspaces []string
	Verbs      []string
	TTL        string
}

// Issue mints a token for req on behalf of c (who may not grant more than it holds) and
// records it in the index. The token is returned once and stored nowhere.
func (a *Authority) Issue(c Caller, req IssueRequest) (string, Issued, error) {
	cl, err := a.claimsFor(req)
	if err == nil {
		err = c.Covers(cl)
	}
	var tok string
	if err == nil {
		if tok, err = a.Sign(cl); err != nil {
			err = nudge.NewError(nudge.BadRequest, err.Error())
		}
	}
	it := Issued{Claims: cl, IssuedBy: c.Subject}
	if err == nil {
		err = a.record(func(m map[string]Issued) error { m[cl.ID] = it; return nil })
	}
	if err != nil {
		return "", Issued{}, err
	}
	return tok, it, nil
}

func (a *Authority) claimsFor(b IssueRequest) (Claims, error) {
	ttl := DefaultTokenTTL
	if b.TTL != "" {
		var err error
		if ttl, err = time.ParseDuration(b.TTL); err != nil || ttl <= 0 || ttl > MaxTokenTTL {
			return Claims{}, nudge.NewError(nudge.BadRequest, fmt.Sprintf("ttl %q: want a positive Go duration up to %s", b.TTL, MaxTokenTTL))
		}
	}
	if strings.HasPrefix(b.Subject, "runtime:") || strings.HasPrefix(b.Subject, "uid:") {
		return Claims{}, nudge.NewError(nudge.BadRequest, fmt.Sprintf("subject %q: the runtime: and uid: prefixes are reserved", b.Subject))
	}
	now := a.now()
	cl := Claims{ID: NewID(), Subject: b.Subject, Workspaces: dedup(b.Workspaces), Verbs: dedup(b.Verbs),
		IssuedAt: now.Unix(), ExpiresAt: now.Add(ttl).Unix()}
	if err := cl.Validate(); err != nil {
		return cl, nudge.NewError(nudge.BadRequest, err.Error())
	}
	return cl, nil
}

// Revoke revokes issued token id on behalf of c, who must cover its workspaces. Once
// Revoke returns, the token is refused.
func (a *Authority) Revoke(c Caller, id string) (Issued, error) {
	var it Issued
	err := a.record(func(m map[string]Issued) error {
		t, ok := m[id]
		if !ok {
			return nudge.NewError(nudge.NotFound, "no issued token "+id)
		}
		if err := c.Covers(Claims{Workspaces: t.Workspaces}); err != nil {
			return err
		}
		t.Revoked, t.RevokedAt = true, a.now()
		m[id], it = t, t
		// The revocation record first: once it is committed the token is refused.
		rec, err := json.Marshal(revocation{At: t.RevokedAt, By: c.Subject, Exp: t.ExpiresAt})
		if err != nil {
			return err
		}
		return a.db.PutMeta(metaRevoked+id, rec)
	})
	return it, err
}

// revocation is the stored record of a revoked token.
type revocation struct {
	At  time.Time `json:"at"`
	By  string    `json:"by"`
	Exp int64     `json:"exp"`
}

// List returns the issued tokens c covers, oldest first.
func (a *Authority) List(c Caller) ([]Issued, error) {
	m, err := a.issued()
	if err != nil {
		return nil, err
	}
	out := []Issued{}
	for _, t := range m {
		if c.Covers(Claims{Workspaces: t.Workspaces}) == nil {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IssuedAt < out[j].IssuedAt })
	return out, nil
}

func (a *Authority) issued() (map[string]Issued, error) {
	m := map[string]Issued{}
	b, err := a.db.GetMeta(metaIssued)
	if errors.Is(err, store.ErrNotFound) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	return m, json.Unmarshal(b, &m)
}

// record updates the index; expired entries older than a day are dropped.
func (a *Authority) record(fn func(map[string]Issued) error) error {
	a.issueMu.Lock()
	defer a.issueMu.Unlock()
	m, err := a.issued()
	if err != nil {
		return err
	}
	if err := fn(m); err != nil {
		return err
	}
	for id, t := range m {
		if a.now().Sub(t.Expiry()) > 24*time.Hour {
			delete(m, id)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return a.db.PutMeta(metaIssued, b)
}

// SingleWorkspace is the one workspace ws names, or "" (several, or all).
func SingleWorkspace(ws []string) string {
	if len(ws) == 1 && ws[0] != AllWorkspaces {
		return ws[0]
	}
	return ""
}

func dedup(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
