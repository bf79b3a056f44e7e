// Package auth is what the nudge API trusts from a caller, and who grants it:
//
//   - the token format: signed bearer tokens (Claims, Sign, Parse, Peek) and the strict
//     decoding of request bodies (DecodeJSON);
//   - the Authority: the signing key in the state dir, verification against the revocation
//     list, issuing, revoking and listing tokens, rotating the key, and runtime tokens
//     (MintRuntime, RevokeRuntime) with their renewal loop (Start, Close);
//   - Authenticate: a connection's peer uid and its Authorization header become a Caller;
//   - the Caller's scope: the verbs and workspaces it may act on and read (Allow, Sees,
//     Covers), carried in a request's context (WithCaller, CallerFrom);
//   - the workspace Policy (spawn dirs, profiles, launchers, rate limits);
//   - the client's side of runtime tokens (RuntimeToken).
//
// A token is "nudge1.<payload>.<signature>": the payload is the claims as JSON, both parts
// base64url without padding, the signature HMAC-SHA256 over "nudge1.<payload>" with the
// daemon's key. Parse checks the signature (in constant time) before it decodes anything,
// so a tampered token is never parsed as JSON. The daemon owns the Authority: Open, Start
// once the registry runs, Close.
package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/panes"
)

// Verbs a token may carry.
const (
	VerbRead      = "read"
	VerbTrigger   = "trigger"
	VerbAck       = "ack"
	VerbHeartbeat = "heartbeat"
	VerbSpawn     = "spawn"
	VerbAdmin     = "admin"
	// VerbAnswer answers an agent's approval dialog (nudge answer, approve, deny).
	VerbAnswer = "answer"
	// VerbType types keys into a runtime's pane from the web view's terminal: whatever a
	// person at the pane could do, past every gate a trigger or an answer passes.
	VerbType = "type"
)

// Verbs lists every verb, in a stable order.
var Verbs = []string{VerbRead, VerbTrigger, VerbAck, VerbHeartbeat, VerbSpawn, VerbAdmin, VerbAnswer, VerbType}

// AllWorkspaces in Claims.Workspaces means every workspace.
const AllWorkspaces = "*"

// KeySize is the length of a signing key in bytes.
const KeySize = 32

// MaxTokenLen bounds a token; longer ones are refused before any work.
const MaxTokenLen = 4096

const prefix = "nudge1."

// Errors Parse returns; callers branch on them with errors.Is.
var (
	ErrMalformed = errors.New("malformed token")
	ErrSignature = errors.New("token signature does not match (tampered, or signed with a rotated key)")
	ErrExpired   = errors.New("token expired")
	ErrInvalid   = errors.New("invalid token claims")
)

// idRE is a token id's shape (ids nudge generates: not the id charset of triggers).
var idRE = regexp.MustCompile(`^[A-Za-z0-9_-]{8,64}$`)

// Claims is what a token says about its bearer.
type Claims struct {
	ID         string   `json:"jti"`           // token id, for revocation
	Subject    string   `json:"sub"`           // who: "orchestrator", "runtime:rt_ws.role"
	Workspaces []string `json:"ws"`            // workspaces it may touch; ["*"] means all
	Verbs      []string `json:"verbs"`         // what it may do
	RuntimeID  string   `json:"rt,omitempty"`  // set for a runtime token: it may act only on itself
	Epoch      string   `json:"rte,omitempty"` // a runtime token's registration epoch
	IssuedAt   int64    `json:"iat"`           // unix seconds
	ExpiresAt  int64    `json:"exp"`           // unix seconds; required
}

// Validate checks the claims' shape (not their signature or expiry).
func (c Claims) Validate() error {
	switch {
	case !idRE.MatchString(c.ID):
		return fmt.Errorf("%w: bad id", ErrInvalid)
	case !nudge.ValidID(c.Subject):
		return fmt.Errorf("%w: bad subject %q", ErrInvalid, c.Subject)
	case len(c.Workspaces) == 0 || len(c.Workspaces) > 256:
		return fmt.Errorf("%w: no workspaces", ErrInvalid)
	case len(c.Verbs) == 0:
		return fmt.Errorf("%w: no verbs", ErrInvalid)
	case c.ExpiresAt <= 0 || c.IssuedAt < 0 || c.ExpiresAt < c.IssuedAt:
		return fmt.Errorf("%w: bad expiry", ErrInvalid)
	case c.RuntimeID != "" && (c.Epoch == "" || len(c.Workspaces) != 1 || c.Workspaces[0] == AllWorkspaces):
		return fmt.Errorf("%w: a runtime token needs an epoch and exactly one workspace", ErrInvalid)
	}
	for _, w := range c.Workspaces {
		if w != AllWorkspaces && panes.ValidWorkspace(w) != nil {
			return fmt.Errorf("%w: bad workspace %q", ErrInvalid, w)
		}
	}
	for _, v := range c.Verbs {
		if !slices.Contains(Verbs, v) {
			return fmt.Errorf("%w: unknown verb %q", ErrInvalid, v)
		}
	}
	return nil
}

// Expiry is ExpiresAt as a time.
func (c Claims) Expiry() time.Time { return time.Unix(c.ExpiresAt, 0) }

// AllWorkspaces reports whether the claims cover every workspace.
func (c Claims) AllWorkspaces() bool { return slices.Contains(c.Workspaces, AllWorkspaces) }

// NewID returns a random token id.
func NewID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b[:])
}

// NewKey returns a random signing key.
func NewKey() []byte {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		panic(err)
	}
	return k
}

// Sign returns the token for c. It fails if the claims are not valid or the key is short.
func Sign(key []byte, c Claims) (string, error) {
	if len(key) < KeySize {
		return "", errors.New("sign token: key too short")
	}
	if err := c.Validate(); err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	head := prefix + base64.RawURLEncoding.EncodeToString(payload)
	return head + "." + base64.RawURLEncoding.EncodeToString(mac(key, head)), nil
}

// tokenAlphabet reports whether tok holds only base64url characters and dots. The
// base64 decoder, even Strict, skips CR and LF, so without this check a signature with
// line breaks inserted would verify: one token would have many spellings.
func tokenAlphabet(tok string) bool {
	for i := 0; i < len(tok); i++ {
		switch c := tok[i]; {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// Parse verifies tok with key and returns its claims if the signature matches, the claims
// are valid and they have not expired at now. The signature is checked before the payload
// is decoded.
func Parse(key []byte, tok string, now time.Time) (Claims, error) {
	var c Claims
	if len(tok) > MaxTokenLen || !strings.HasPrefix(tok, prefix) || len(key) < KeySize || !tokenAlphabet(tok) {
		return c, ErrMalformed
	}
	i := strings.LastIndexByte(tok, '.')
	if i < len(prefix) {
		return c, ErrMalformed
	}
	head, sig64 := tok[:i], tok[i+1:]
	payload64 := head[len(prefix):]
	if payload64 == "" || strings.IndexByte(payload64, '.') >= 0 {
		return c, ErrMalformed
	}
	sig, err := base64.RawURLEncoding.Strict().DecodeString(sig64)
	if err != nil || len(sig) != sha256.Size {
		return c, ErrMalformed
	}
	if !hmac.Equal(sig, mac(key, head)) {
		return c, ErrSignature
	}
	payload, err := base64.RawURLEncoding.Strict().DecodeString(payload64)
	if err != nil {
		return c, ErrMalformed
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || dec.More() {
		return Claims{}, ErrMalformed
	}
	if err := c.Validate(); err != nil {
		return Claims{}, err
	}
	if !now.Before(c.Expiry()) {
		return Claims{}, fmt.Errorf("%w at %s", ErrExpired, c.Expiry().UTC().Format(time.RFC3339))
	}
	return c, nil
}

// Peek decodes a token's claims WITHOUT checking the signature or expiry. Use it only for
// a client's own token (to see when it expires), never to authorize anything.
func Peek(tok string) (Claims, error) {
	var c Claims
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[0]+"." != prefix {
		return c, ErrMalformed
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return c, ErrMalformed
	}
	if json.Unmarshal(payload, &c) != nil {
		return Claims{}, ErrMalformed
	}
	return c, nil
}

func mac(key []byte, head string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(head))
	return h.Sum(nil)
}
