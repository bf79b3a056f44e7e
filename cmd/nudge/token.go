package main

// Orchestrator tokens: the signing key in the state dir, verification with the revocation
// list, and `nudge token issue|revoke|list|rotate-key` with their API routes.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/store"
)

const (
	keyFile                = "token.key"
	metaRevoked            = "auth/revoked/" // + token id: revocation record
	metaIssued             = "auth/issued"   // index of issued orchestrator tokens (for list)
	metaRuntimeEpoch       = "auth/rt/"      // + runtime id: the current registration epoch
	metaKeyID              = "auth/key_id"   // which token.key this store's revocations belong to
	maxTokenTTL            = 366 * 24 * time.Hour
	defaultTokenTTL        = 24 * time.Hour
	defaultRuntimeTokenTTL = 24 * time.Hour
)

// authority holds the signing key and the runtime-token state. The daemon owns it:
// openAuthority in openDaemon, Close in daemon.Close.
type authority struct {
	db      *store.DB
	policy  *policy // nil: no workspace policy
	keyPath string
	ttl     time.Duration // runtime tokens
	now     func() time.Time

	mu  sync.RWMutex
	key []byte

	issueMu sync.Mutex // serialises the issued-token index

	rtMu   sync.Mutex
	rtTok  map[string]time.Time // runtime id -> when its current token was minted
	cancel context.CancelFunc
	done   chan struct{}
}

// openAuthority loads the signing key from the state dir, creating it 0600 on first start.
// A key file readable by group or others is refused.
func openAuthority(cfg serveConfig, db *store.DB) (*authority, error) {
	a := &authority{db: db, keyPath: filepath.Join(cfg.StateDir, keyFile), ttl: cfg.RuntimeTokenTTL,
		now: time.Now, rtTok: map[string]time.Time{}}
	if a.ttl <= 0 {
		a.ttl = defaultRuntimeTokenTTL
	}
	key, err := loadKey(a.keyPath)
	fresh := errors.Is(err, os.ErrNotExist)
	if fresh {
		key = auth.NewKey()
		err = writeKey(a.keyPath, key)
	}
	if err != nil {
		return nil, err
	}
	a.key = key
	if db != nil { // nil: a config check without a store
		if err := a.checkBinding(fresh); err != nil {
			return nil, err
		}
	}
	if a.policy, err = loadPolicy(cfg.PolicyFile, cfg.Roots); err != nil {
		return nil, err
	}
	return a, nil
}

func loadKey(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("token key %s must be a regular file with mode 0600 (is %s)", path, fi.Mode())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read token key: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) < auth.KeySize {
		return nil, fmt.Errorf("token key %s is corrupt (want %d hex-encoded bytes)", path, auth.KeySize)
	}
	return key, nil
}

// writeKey writes key atomically (a temp file 0600, fsync, rename).
func writeKey(path string, key []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write token key: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".token.key-*") // created 0600
	if err != nil {
		return fmt.Errorf("write token key: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(key) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write token key: %w", err)
	}
	return nil
}

func (a *authority) signingKey() []byte {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.key
}

// sign mints a token for c.
func (a *authority) sign(c auth.Claims) (string, error) { return auth.Sign(a.signingKey(), c) }

// keyID names a key without revealing it.
func keyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("nudge token key id\x00"), key...))
	return hex.EncodeToString(sum[:8])
}

// checkBinding makes sure the store's revocation list belongs to the key. The list lives
// in the store, the key beside it: a store that was emptied, replaced or is not the one
// the key was used with has lost revocations, and a revoked token would work again. Then
// the key is rotated (every token, revoked or not, stops working; runtime tokens are
// re-minted) and the store is bound to the new key. A new key, or a store that predates
// the binding but has history, is bound as it is.
func (a *authority) checkBinding(fresh bool) error {
	want := keyID(a.key)
	got, err := a.db.GetMeta(metaKeyID)
	switch {
	case err == nil && string(got) == want:
		return nil
	case fresh: // no token signed with it exists yet
		return a.db.PutMeta(metaKeyID, []byte(want))
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("read token key binding: %w", err)
	}
	reason := ""
	if err == nil {
		reason = "the store's revocation list belongs to another token key (a store from elsewhere, or token.key was replaced)"
	} else if seq, _, herr := a.db.AuditHead(); herr != nil {
		return fmt.Errorf("read token key binding: %w", herr)
	} else if seq == 0 {
		reason = "the store is new but token.key is not: revocations recorded in an earlier store are gone"
	}
	if reason == "" { // a store from before the binding: bind it to its key
		return a.db.PutMeta(metaKeyID, []byte(want))
	}
	if err := a.rotate(); err != nil {
		return err
	}
	_, err = a.db.AppendAudit(nudge.AuditRecord{Event: "token_key_rotated", Subject: "nudge",
		Reason: reason + "; every token signed with the previous key is invalid"})
	return err
}

// rotate replaces the key: every token signed before stops working.
func (a *authority) rotate() error {
	key := auth.NewKey()
	if err := writeKey(a.keyPath, key); err != nil {
		return err
	}
	if err := a.db.PutMeta(metaKeyID, []byte(keyID(key))); err != nil {
		return fmt.Errorf("bind token key: %w", err)
	}
	a.mu.Lock()
	a.key = key
	a.mu.Unlock()
	a.rtMu.Lock()
	clear(a.rtTok) // the renewal loop re-mints runtime tokens at once
	a.rtMu.Unlock()
	return nil
}

// verify checks a bearer token: signature, expiry, revocation, and for a runtime token its
// epoch. Store errors fail closed.
func (a *authority) verify(tok string) (auth.Claims, error) {
	cl, err := auth.Parse(a.signingKey(), tok, a.now())
	if err != nil {
		return cl, &apiError{nudge.Unauthorized, "token refused: " + err.Error()}
	}
	if _, err := a.db.GetMeta(metaRevoked + cl.ID); err == nil {
		return cl, &apiError{nudge.Unauthorized, "token refused: token " + cl.ID + " was revoked"}
	} else if !errors.Is(err, store.ErrNotFound) {
		return cl, &apiError{nudge.Unavailable, "cannot check the revocation list: " + err.Error()}
	}
	if cl.RuntimeID != "" {
		epoch, err := a.db.GetMeta(metaRuntimeEpoch + cl.RuntimeID)
		switch {
		case errors.Is(err, store.ErrNotFound) || (err == nil && string(epoch) != cl.Epoch):
			return cl, &apiError{nudge.Unauthorized, "token refused: runtime " + cl.RuntimeID + " was deregistered; its token is revoked"}
		case err != nil:
			return cl, &apiError{nudge.Unavailable, "cannot check the runtime epoch: " + err.Error()}
		}
	}
	return cl, nil
}

// issuedToken is an entry of the issued-token index (never the token itself).
type issuedToken struct {
	auth.Claims
	Revoked   bool      `json:"revoked,omitempty"`
	RevokedAt time.Time `json:"revoked_at,omitempty"`
	IssuedBy  string    `json:"issued_by"`
}

func (a *authority) issued() (map[string]issuedToken, error) {
	m := map[string]issuedToken{}
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
func (a *authority) record(fn func(map[string]issuedToken) error) error {
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
	cl, err := d.claimsFor(b)
	if err == nil {
		err = c.covers(cl)
	}
	var tok string
	if err == nil {
		tok, err = d.auth.sign(cl)
		if err != nil {
			err = badRequest("%v", err)
		}
	}
	it := issuedToken{Claims: cl, IssuedBy: c.Subject}
	if err == nil {
		err = d.auth.record(func(m map[string]issuedToken) error { m[cl.ID] = it; return nil })
	}
	if err != nil {
		writeError(w, err)
		return
	}
	d.auditCall(r, c, "token_issued", "", singleWorkspace(cl.Workspaces), fmt.Sprintf("token %s for %s: verbs %s, workspaces %s, expires %s",
		cl.ID, cl.Subject, strings.Join(cl.Verbs, ","), strings.Join(cl.Workspaces, ","), cl.Expiry().UTC().Format(time.RFC3339)))
	writeJSON(w, http.StatusCreated, issueReply{Token: tok, issuedToken: it})
}

func (d *daemon) claimsFor(b issueBody) (auth.Claims, error) {
	ttl := defaultTokenTTL
	if b.TTL != "" {
		var err error
		if ttl, err = time.ParseDuration(b.TTL); err != nil || ttl <= 0 || ttl > maxTokenTTL {
			return auth.Claims{}, badRequest("ttl %q: want a positive Go duration up to %s", b.TTL, maxTokenTTL)
		}
	}
	if strings.HasPrefix(b.Subject, "runtime:") || strings.HasPrefix(b.Subject, "uid:") {
		return auth.Claims{}, badRequest("subject %q: the runtime: and uid: prefixes are reserved", b.Subject)
	}
	now := d.auth.now()
	cl := auth.Claims{ID: auth.NewID(), Subject: b.Subject, Workspaces: dedup(b.Workspaces), Verbs: dedup(b.Verbs),
		IssuedAt: now.Unix(), ExpiresAt: now.Add(ttl).Unix()}
	if err := cl.Validate(); err != nil {
		return cl, badRequest("%v", err)
	}
	return cl, nil
}

func (d *daemon) handleRevokeToken(w http.ResponseWriter, r *http.Request, c caller) {
	id := r.PathValue("id")
	var it issuedToken
	err := d.auth.record(func(m map[string]issuedToken) error {
		t, ok := m[id]
		if !ok {
			return &apiError{nudge.NotFound, "no issued token " + id}
		}
		if err := c.covers(auth.Claims{Workspaces: t.Workspaces}); err != nil {
			return err
		}
		t.Revoked, t.RevokedAt = true, d.auth.now()
		m[id], it = t, t
		// The revocation record first: once it is committed the token is refused.
		return d.db.PutMeta(metaRevoked+id, mustJSON(map[string]any{"at": t.RevokedAt, "by": c.Subject, "exp": t.ExpiresAt}))
	})
	if err != nil {
		writeError(w, err)
		return
	}
	d.auditCall(r, c, "token_revoked", "", singleWorkspace(it.Workspaces), "token "+id+" of "+it.Subject)
	writeJSON(w, http.StatusOK, it)
}

func (d *daemon) handleListTokens(w http.ResponseWriter, r *http.Request, c caller) {
	m, err := d.auth.issued()
	if err != nil {
		writeError(w, err)
		return
	}
	out := []issuedToken{}
	for _, t := range m {
		if c.covers(auth.Claims{Workspaces: t.Workspaces}) == nil {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IssuedAt < out[j].IssuedAt })
	writeJSON(w, http.StatusOK, out)
}

func (d *daemon) handleRotateKey(w http.ResponseWriter, r *http.Request, c caller) {
	if c.Workspaces != nil || c.RuntimeID != "" {
		writeError(w, &apiError{nudge.Forbidden, "rotating the key revokes every token: it needs admin on all workspaces"})
		return
	}
	if err := d.auth.rotate(); err != nil {
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

func singleWorkspace(ws []string) string {
	if len(ws) == 1 && ws[0] != auth.AllWorkspaces {
		return ws[0]
	}
	return ""
}

func dedup(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" && !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
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
		fs.StringVar(&b.TTL, "ttl", defaultTokenTTL.String(), "lifetime")
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
