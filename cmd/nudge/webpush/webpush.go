// Package webpush sends Web Push messages to browsers: the payload encrypted for one
// subscription (RFC 8291, aes128gcm of RFC 8188) and the request signed by the server's
// VAPID key (RFC 8292), with the standard library's crypto alone (no dependency).
//
// The main types:
//
//	Subscription  what a browser's PushSubscription.toJSON() gives: an endpoint and keys
//	VAPID         the server's signing key; its public half goes to the page
//	Sender        posts an encrypted message to a subscription's push service
//
// What the daemon pushes, to which device, and when a subscription is dropped is its
// caller's business; this package only encrypts, signs and posts.
package webpush

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Errors callers branch on.
var (
	// ErrGone: the push service says the subscription is no more (404, 410): drop it.
	ErrGone = errors.New("push subscription gone")
	// ErrBadSubscription: the subscription cannot be used (endpoint, keys).
	ErrBadSubscription = errors.New("bad push subscription")
)

// Subscription is a browser's push subscription (PushSubscription.toJSON()).
type Subscription struct {
	Endpoint string `json:"endpoint"`
	Keys     struct {
		P256dh string `json:"p256dh"` // the browser's P-256 public key, uncompressed, base64url
		Auth   string `json:"auth"`   // its 16-byte authentication secret, base64url
	} `json:"keys"`
}

// maxEndpoint bounds a subscription's endpoint URL.
const maxEndpoint = 2048

// Check reports whether s can be pushed to: an https endpoint without user info, a valid
// P-256 point and a 16-byte secret.
func (s Subscription) Check() error {
	u, err := url.Parse(s.Endpoint)
	if err != nil || len(s.Endpoint) > maxEndpoint || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return fmt.Errorf("%w: endpoint must be an https URL", ErrBadSubscription)
	}
	if _, _, err := s.keys(); err != nil {
		return err
	}
	return nil
}

func (s Subscription) keys() (*ecdh.PublicKey, []byte, error) {
	pub, err1 := b64(s.Keys.P256dh)
	auth, err2 := b64(s.Keys.Auth)
	if err1 != nil || err2 != nil || len(auth) != 16 {
		return nil, nil, fmt.Errorf("%w: keys.p256dh and keys.auth (16 bytes) in base64url", ErrBadSubscription)
	}
	k, err := ecdh.P256().NewPublicKey(pub)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: keys.p256dh: %v", ErrBadSubscription, err)
	}
	return k, auth, nil
}

// b64 reads base64url with or without padding.
func b64(s string) ([]byte, error) {
	if b, err := base64.RawURLEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.URLEncoding.DecodeString(s)
}

// recordSize is the aes128gcm record size announced; one record holds the payload.
const recordSize = 4096

// MaxPayload is the largest plaintext Encrypt takes (one record, less its padding
// delimiter and tag; push services take about 4 KB of body).
const MaxPayload = 3992

// Encrypt is payload encrypted for s (RFC 8291): the aes128gcm body, its header
// carrying a random salt and a fresh sender key.
func Encrypt(s Subscription, payload []byte) ([]byte, error) {
	if len(payload) > MaxPayload {
		return nil, fmt.Errorf("push payload of %d bytes: at most %d", len(payload), MaxPayload)
	}
	uaPub, authSecret, err := s.keys()
	if err != nil {
		return nil, err
	}
	as, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	return seal(as, salt, uaPub, authSecret, payload)
}

// seal is Encrypt with the sender key as and salt given.
func seal(as *ecdh.PrivateKey, salt []byte, uaPub *ecdh.PublicKey, authSecret, payload []byte) ([]byte, error) {
	cek, nonce, err := contentKeys(as, uaPub, as.PublicKey().Bytes(), uaPub.Bytes(), authSecret, salt)
	if err != nil {
		return nil, err
	}
	gcm, err := newGCM(cek)
	if err != nil {
		return nil, err
	}
	asPub := as.PublicKey().Bytes()
	head := make([]byte, 0, 16+4+1+len(asPub))
	head = append(head, salt...)
	head = binary.BigEndian.AppendUint32(head, recordSize)
	head = append(head, byte(len(asPub)))
	head = append(head, asPub...)
	plain := append(append([]byte(nil), payload...), 0x02) // the last record's delimiter
	return gcm.Seal(head, nonce, plain, nil), nil
}

// contentKeys derives the content key and nonce (RFC 8291 §3.4, RFC 8188 §2.2) from an
// ECDH of priv and peer, the two public keys as the user agent (ua) and the application
// server (as) hold them, the auth secret and the salt.
func contentKeys(priv *ecdh.PrivateKey, peer *ecdh.PublicKey, asPub, uaPub, authSecret, salt []byte) (cek, nonce []byte, err error) {
	shared, err := priv.ECDH(peer)
	if err != nil {
		return nil, nil, err
	}
	info := append(append([]byte("WebPush: info\x00"), uaPub...), asPub...)
	ikm, err := hkdf.Key(sha256.New, shared, authSecret, string(info), 32)
	if err != nil {
		return nil, nil, err
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, nil, err
	}
	if cek, err = hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16); err != nil {
		return nil, nil, err
	}
	nonce, err = hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12)
	return cek, nonce, err
}

func newGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// VAPID is the application server's key pair (P-256) that signs every push request.
type VAPID struct{ key *ecdsa.PrivateKey }

// NewVAPID makes a key pair.
func NewVAPID() (*VAPID, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &VAPID{k}, nil
}

// ParseVAPID reads a key Marshal wrote.
func ParseVAPID(b []byte) (*VAPID, error) {
	k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), b)
	if err != nil {
		return nil, fmt.Errorf("vapid key: %w", err)
	}
	return &VAPID{k}, nil
}

// Marshal is the private key's bytes (keep them 0600).
func (v *VAPID) Marshal() ([]byte, error) { return v.key.Bytes() }

// PublicKey is the public key as the page's pushManager.subscribe wants it
// (applicationServerKey): the uncompressed point, base64url.
func (v *VAPID) PublicKey() string {
	b, _ := v.key.PublicKey.Bytes()
	return base64.RawURLEncoding.EncodeToString(b)
}

// token is the signed JWT (ES256) for the push service at aud, valid until exp.
func (v *VAPID) token(aud, sub string, exp time.Time) (string, error) {
	enc := base64.RawURLEncoding
	claims, err := json.Marshal(map[string]any{"aud": aud, "exp": exp.Unix(), "sub": sub})
	if err != nil {
		return "", err
	}
	signing := enc.EncodeToString([]byte(`{"typ":"JWT","alg":"ES256"}`)) + "." + enc.EncodeToString(claims)
	h := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, v.key, h[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signing + "." + enc.EncodeToString(sig), nil
}

// Sender posts messages to push services.
type Sender struct {
	VAPID *VAPID
	// Subject is the contact the push service may reach the sender at (mailto: or
	// https:). "" means "mailto:nudge@localhost".
	Subject string
	// Client posts the requests. nil means a client with a 10-second timeout.
	Client *http.Client
	// Now is the clock. nil means time.Now.
	Now func() time.Time
}

// Message is one push: its payload, how long the service may hold it, how urgent.
type Message struct {
	Payload []byte
	TTL     time.Duration // 0 means a day
	Urgency string        // very-low, low, normal, high; "" normal
	Topic   string        // a newer message of the same topic replaces an undelivered one
}

// Send encrypts m for s and posts it; ErrGone when the service says the subscription is
// no more.
func (p *Sender) Send(ctx context.Context, s Subscription, m Message) error {
	if err := s.Check(); err != nil {
		return err
	}
	body, err := Encrypt(s, m.Payload)
	if err != nil {
		return err
	}
	u, _ := url.Parse(s.Endpoint)
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	sub := p.Subject
	if sub == "" {
		sub = "mailto:nudge@localhost"
	}
	jwt, err := p.VAPID.token(u.Scheme+"://"+u.Host, sub, now().Add(12*time.Hour))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	ttl := m.TTL
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Content-Encoding", "aes128gcm")
	req.Header.Set("TTL", strconv.Itoa(int(ttl.Seconds())))
	req.Header.Set("Authorization", "vapid t="+jwt+", k="+p.VAPID.PublicKey())
	if m.Urgency != "" {
		req.Header.Set("Urgency", m.Urgency)
	}
	if m.Topic != "" {
		req.Header.Set("Topic", m.Topic)
	}
	c := p.Client
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return ErrGone
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("push: %s: %q", resp.Status, msg)
	}
	return nil
}
