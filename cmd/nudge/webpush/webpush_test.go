package webpush

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// browser is a user agent's side of a subscription: its key pair and auth secret.
type browser struct {
	priv *ecdh.PrivateKey
	auth []byte
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	return &browser{k, auth}
}

func (b *browser) subscription(endpoint string) Subscription {
	var s Subscription
	s.Endpoint = endpoint
	s.Keys.P256dh = base64.RawURLEncoding.EncodeToString(b.priv.PublicKey().Bytes())
	s.Keys.Auth = base64.RawURLEncoding.EncodeToString(b.auth)
	return s
}

// decrypt is what the browser does with a push body (RFC 8291 as the receiver).
func (b *browser) decrypt(body []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, fmt.Errorf("body of %d bytes", len(body))
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if rs != recordSize || idlen != 65 || len(body) < 21+idlen {
		return nil, fmt.Errorf("header: rs %d idlen %d", rs, idlen)
	}
	asPub, ct := body[21:21+idlen], body[21+idlen:]
	peer, err := ecdh.P256().NewPublicKey(asPub)
	if err != nil {
		return nil, err
	}
	cek, nonce, err := contentKeys(b.priv, peer, asPub, b.priv.PublicKey().Bytes(), b.auth, salt)
	if err != nil {
		return nil, err
	}
	gcm, _ := newGCM(cek)
	plain, err := gcm.Open(nil, nonce, ct, nil)
	if err != nil {
		return nil, err
	}
	plain = bytes.TrimRight(plain, "\x00")
	if n := len(plain); n == 0 || plain[n-1] != 0x02 {
		return nil, fmt.Errorf("no last-record delimiter: %q", plain)
	}
	return plain[:len(plain)-1], nil
}

// checkVAPID verifies a request's Authorization: vapid t=JWT, k=KEY against key and aud.
func checkVAPID(t *testing.T, h, key, aud string) {
	t.Helper()
	rest, ok := strings.CutPrefix(h, "vapid t=")
	jwt, k, ok2 := strings.Cut(rest, ", k=")
	if !ok || !ok2 || k != key {
		t.Fatalf("authorization %q", h)
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("jwt %q", jwt)
	}
	var claims struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}
	cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if err := json.Unmarshal(cb, &claims); err != nil || claims.Aud != aud || claims.Sub == "" || claims.Exp < time.Now().Unix() {
		t.Fatalf("claims %s (want aud %s)", cb, aud)
	}
	pb, _ := base64.RawURLEncoding.DecodeString(k)
	x, y := elliptic.Unmarshal(elliptic.P256(), pb) //nolint:staticcheck // a test's plain decode of the point
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	hash := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: x, Y: y}
	if len(sig) != 64 || !ecdsa.Verify(pub, hash[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("the VAPID signature does not verify")
	}
}

// TestSendToPushService: a push-service stand-in gets a body only the subscription's
// keys open, signed by the server's VAPID key for the service's origin; 410 is ErrGone.
func TestSendToPushService(t *testing.T) {
	v, err := NewVAPID()
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	type got struct {
		body []byte
		hdr  http.Header
	}
	gotc := make(chan got, 1)
	status := http.StatusCreated
	svc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		gotc <- got{body, r.Header.Clone()}
		w.WriteHeader(status)
	}))
	defer svc.Close()
	s := &Sender{VAPID: v, Subject: "mailto:ops@example.com", Client: svc.Client()}
	payload := []byte(`{"title":"rt_w.a needs you","body":"Run rm -rf build?"}`)
	if err := s.Send(context.Background(), b.subscription(svc.URL+"/push/abc"), Message{Payload: payload, Urgency: "high"}); err != nil {
		t.Fatal(err)
	}
	g := <-gotc
	if g.hdr.Get("Content-Encoding") != "aes128gcm" || g.hdr.Get("TTL") != "86400" || g.hdr.Get("Urgency") != "high" {
		t.Fatalf("headers %v", g.hdr)
	}
	if bytes.Contains(g.body, []byte("needs you")) {
		t.Fatal("the payload went in the clear")
	}
	if plain, err := b.decrypt(g.body); err != nil || !bytes.Equal(plain, payload) {
		t.Fatalf("decrypted %q (%v), want %q", plain, err, payload)
	}
	checkVAPID(t, g.hdr.Get("Authorization"), v.PublicKey(), svc.URL)

	// Another browser's keys do not open it.
	other := newBrowser(t)
	other.auth = b.auth
	if _, err := other.decrypt(g.body); err == nil {
		t.Error("another browser's key opened the payload")
	}

	status = http.StatusGone
	err = s.Send(context.Background(), b.subscription(svc.URL+"/push/abc"), Message{Payload: payload})
	<-gotc
	if !errors.Is(err, ErrGone) {
		t.Fatalf("410: %v", err)
	}
}

func TestSubscriptionCheck(t *testing.T) {
	b := newBrowser(t)
	ok := b.subscription("https://push.example.com/x")
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for i, s := range []Subscription{
		b.subscription("http://push.example.com/x"),
		b.subscription("https://user:pw@push.example.com/x"),
		b.subscription("file:///etc/passwd"),
		b.subscription("https://push.example.com/" + strings.Repeat("a", maxEndpoint)),
		func() Subscription { s := ok; s.Keys.Auth = "c2hvcnQ"; return s }(),
		func() Subscription {
			s := ok
			s.Keys.P256dh = base64.RawURLEncoding.EncodeToString(make([]byte, 65))
			return s
		}(),
	} {
		if err := s.Check(); !errors.Is(err, ErrBadSubscription) {
			t.Errorf("#%d: %v", i, err)
		}
	}
	if _, err := Encrypt(ok, make([]byte, MaxPayload+1)); err == nil {
		t.Error("an oversized payload was encrypted")
	}
	v, _ := NewVAPID()
	raw, _ := v.Marshal()
	v2, err := ParseVAPID(raw)
	if err != nil || v2.PublicKey() != v.PublicKey() {
		t.Fatalf("vapid round trip: %v", err)
	}
}

// TestRFC8291Example: the example of RFC 8291 Appendix A, byte for byte.
func TestRFC8291Example(t *testing.T) {
	d := func(s string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	as, err := ecdh.P256().NewPrivateKey(d("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"))
	if err != nil {
		t.Fatal(err)
	}
	ua, err := ecdh.P256().NewPublicKey(d("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := seal(as, d("DGv6ra1nlYgDCS1FRnbzlw"), ua, d("BTBZMqHH6r4Tts7J_aSIgg"), []byte("When I grow up, I want to be a watermelon"))
	if err != nil {
		t.Fatal(err)
	}
	want := "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
	if g := base64.RawURLEncoding.EncodeToString(got); g != want {
		t.Fatalf("got  %s\nwant %s", g, want)
	}
}
