package auth

// Who may call the API, and what they may do (SECURITY.md).
//
// 1. The kernel: the socket is 0600 in a 0700 directory, so only the daemon's uid (and
//    root) can connect at all.
// 2. Peer credentials (SO_PEERCRED; LOCAL_PEERCRED on macOS and FreeBSD): a peer uid
//    other than the daemon's is refused unless Config.AllowUIDs names it; such a peer
//    must also present a token.
// 3. Bearer tokens (Claims, HMAC-SHA256 with the key in the state dir): a subject,
//    workspaces, verbs, an expiry and an id; revoked ids are refused on every request.
//    Runtime tokens (put in a spawned pane's environment) carry one runtime id and its
//    registration epoch, and stop working when the runtime is deregistered.
// 4. No token from the daemon's own uid: full access, unless Config.RequireToken.

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

const (
	keyFile          = "token.key"
	metaRevoked      = "auth/revoked/" // + token id: revocation record
	metaIssued       = "auth/issued"   // index of issued orchestrator tokens (for list)
	metaRuntimeEpoch = "auth/rt/"      // + runtime id: the current registration epoch
	metaKeyID        = "auth/key_id"   // which token.key this store's revocations belong to

	// MaxTokenTTL is the longest lifetime Issue grants.
	MaxTokenTTL = 366 * 24 * time.Hour
	// DefaultTokenTTL is the lifetime of an issued token that asks for none.
	DefaultTokenTTL = 24 * time.Hour
)

// Config is the authority's configuration. DefaultConfig gives the defaults.
type Config struct {
	StateDir        string        // holds token.key; required
	RequireToken    bool          // refuse tokenless requests even from the daemon's uid
	SharedToken     string        // the optional shared secret (serve --api-token); "" none
	AllowUIDs       []int         // peer uids besides the daemon's own; they must present a token
	PolicyFile      string        // workspace policy (policy.go); "" means none
	Roots           []string      // the allowed workspace roots a policy's dirs must lie under
	RuntimeTokenTTL time.Duration // lifetime of a runtime token, renewed at half-life; 0: a day

	Now    func() time.Time // nil: time.Now
	Logger hclog.Logger     // nil: no logging
}

// DefaultConfig is the configuration serve starts from.
func DefaultConfig() Config {
	return Config{RuntimeTokenTTL: 24 * time.Hour}
}

// Store is where the authority keeps its state: the revocation list, the issued-token
// index, runtime epochs and the key binding (satisfied by *store.Meta beside
// *store.AuditLog, whose head tells a new store). A missing key is store.ErrNotFound.
type Store interface {
	GetMeta(key string) ([]byte, error)
	PutMeta(key string, val []byte) error
	DeleteMeta(key string) error
	AuditHead() (seq uint64, hash string, err error)
}

// Authority holds the signing key, verifies tokens, issues and revokes them, and mints
// and renews runtime tokens. The daemon owns it: Open, then Start once the registry runs,
// and Close (which joins the renewal loop).
type Authority struct {
	cfg     Config
	db      Store
	audit   func(event, reason string) error
	policy  *Policy // nil: no workspace policy
	keyPath string
	now     func() time.Time
	log     hclog.Logger

	mu  sync.RWMutex
	key []byte

	issueMu sync.Mutex // serialises the issued-token index

	rt renewal
}

// Open loads the signing key from the state dir, creating it 0600 on first start (a key
// file readable by group or others is refused), checks that the store's revocations
// belong to it, and loads the policy. db nil checks the configuration only. audit records
// an authority event (a key rotated at start) in the audit log; nil records nothing.
func Open(cfg Config, db Store, audit func(event, reason string) error) (*Authority, error) {
	a := &Authority{cfg: cfg, db: db, audit: audit, keyPath: filepath.Join(cfg.StateDir, keyFile), now: cfg.Now, log: cfg.Logger}
	if a.now == nil {
		a.now = time.Now
	}
	if a.log == nil {
		a.log = hclog.NewNullLogger()
	}
	if a.cfg.RuntimeTokenTTL <= 0 {
		a.cfg.RuntimeTokenTTL = DefaultConfig().RuntimeTokenTTL
	}
	a.rt.minted = map[string]time.Time{}
	key, err := loadKey(a.keyPath)
	fresh := errors.Is(err, os.ErrNotExist)
	if fresh {
		key = NewKey()
		err = writeKey(a.keyPath, key)
	}
	if err != nil {
		return nil, err
	}
	a.key = key
	if db != nil {
		if err := a.checkBinding(fresh); err != nil {
			return nil, err
		}
	}
	if a.policy, err = LoadPolicy(cfg.PolicyFile, cfg.Roots, a.now); err != nil {
		return nil, err
	}
	return a, nil
}

// Policy is the workspace policy; nil (which allows everything) when there is none.
func (a *Authority) Policy() *Policy { return a.policy }

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
	if err != nil || len(key) < KeySize {
		return nil, fmt.Errorf("token key %s is corrupt (want %d hex-encoded bytes)", path, KeySize)
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

func (a *Authority) signingKey() []byte {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.key
}

// Sign mints a token for c with the current key.
func (a *Authority) Sign(c Claims) (string, error) { return Sign(a.signingKey(), c) }

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
func (a *Authority) checkBinding(fresh bool) error {
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
	if a.audit == nil {
		return nil
	}
	return a.audit("token_key_rotated", reason+"; every token signed with the previous key is invalid")
}

// RotateKey replaces the key for c: every token signed before stops working. It needs a
// caller with every workspace (and not a runtime token).
func (a *Authority) RotateKey(c Caller) error {
	if c.Workspaces != nil || c.RuntimeID != "" {
		return nudge.NewError(nudge.Forbidden, "rotating the key revokes every token: it needs admin on all workspaces")
	}
	return a.rotate()
}

func (a *Authority) rotate() error {
	key := NewKey()
	if err := writeKey(a.keyPath, key); err != nil {
		return err
	}
	if err := a.db.PutMeta(metaKeyID, []byte(keyID(key))); err != nil {
		return fmt.Errorf("bind token key: %w", err)
	}
	a.mu.Lock()
	a.key = key
	a.mu.Unlock()
	a.rt.forgetAll() // the renewal loop re-mints runtime tokens at once
	return nil
}

// Verify checks a bearer token: signature, expiry, revocation, and for a runtime token its
// epoch. Store errors fail closed.
func (a *Authority) Verify(tok string) (Claims, error) {
	cl, err := Parse(a.signingKey(), tok, a.now())
	if err != nil {
		return cl, nudge.NewError(nudge.Unauthorized, "token refused: "+err.Error())
	}
	if _, err := a.db.GetMeta(metaRevoked + cl.ID); err == nil {
		return cl, nudge.NewError(nudge.Unauthorized, "token refused: token "+cl.ID+" was revoked")
	} else if !errors.Is(err, store.ErrNotFound) {
		return cl, nudge.NewError(nudge.Unavailable, "cannot check the revocation list: "+err.Error())
	}
	if cl.RuntimeID != "" {
		epoch, err := a.db.GetMeta(metaRuntimeEpoch + cl.RuntimeID)
		switch {
		case errors.Is(err, store.ErrNotFound) || (err == nil && string(epoch) != cl.Epoch):
			return cl, nudge.NewError(nudge.Unauthorized, "token refused: runtime "+cl.RuntimeID+" was deregistered; its token is revoked")
		case err != nil:
			return cl, nudge.NewError(nudge.Unavailable, "cannot check the runtime epoch: "+err.Error())
		}
	}
	return cl, nil
}

// Peer is who is on the other end of a unix-socket connection (SO_PEERCRED; on macOS
// and FreeBSD LOCAL_PEERCRED, PID 0 where the kernel does not say it).
type Peer struct {
	UID, PID int
	Known    bool
}

// Authenticate checks the peer's uid, then the bearer token in authorization (the
// Authorization header's value) if there is one.
func (a *Authority) Authenticate(p Peer, authorization string) (Caller, error) {
	c := Caller{UID: -1}
	if !p.Known {
		return c, nudge.NewError(nudge.Forbidden, "peer credentials unavailable: refusing the connection")
	}
	c.UID = p.UID
	own := p.UID == os.Geteuid()
	if !own && !a.uidAllowed(p.UID) {
		return c, nudge.NewError(nudge.Forbidden, "peer uid "+strconv.Itoa(p.UID)+" is not allowed to use this daemon (serve --allow-uid)")
	}
	c.Subject = "uid:" + strconv.Itoa(p.UID)
	if authorization == "" {
		if own && !a.cfg.RequireToken && a.cfg.SharedToken == "" {
			return c, nil
		}
		return c, nudge.NewError(nudge.Unauthorized, "a token is required: send Authorization: Bearer <token> (nudge --token, $NUDGE_TOKEN)")
	}
	tok, ok := strings.CutPrefix(authorization, "Bearer ")
	if !ok || tok == "" {
		return c, nudge.NewError(nudge.Unauthorized, "the Authorization header must be 'Bearer <token>'")
	}
	if a.cfg.SharedToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(a.cfg.SharedToken)) == 1 {
		c.Subject = "api-token"
		return c, nil
	}
	tc, err := a.AuthenticateToken(tok)
	if err != nil {
		return c, err
	}
	tc.UID = c.UID
	return tc, nil
}

// AuthenticateToken makes a caller of a signed token alone (Verify: signature, expiry,
// revocation), with no peer and never the shared --api-token: for a caller that is not on
// the socket (the web view's device cookie). The caller's UID is -1.
func (a *Authority) AuthenticateToken(tok string) (Caller, error) {
	cl, err := a.Verify(tok)
	if err != nil {
		return Caller{UID: -1}, err
	}
	c := Caller{UID: -1, Subject: cl.Subject + "#" + cl.ID[:8]}
	c.Verbs, c.RuntimeID, c.TokenID, c.Expires = cl.Verbs, cl.RuntimeID, cl.ID, cl.Expiry()
	if !cl.AllWorkspaces() {
		c.Workspaces = cl.Workspaces
	}
	return c, nil
}

func (a *Authority) uidAllowed(uid int) bool {
	for _, u := range a.cfg.AllowUIDs {
		if u == uid {
			return true
		}
	}
	return false
}
