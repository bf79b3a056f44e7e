package web

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/webpush"
)

// pushService is a push-service stand-in: it gets what the daemon posts, and the test
// (holding the subscription's keys, as a browser does) opens it.
type pushService struct {
	*httptest.Server
	got chan []byte
}

func newPushService(t *testing.T) *pushService {
	p := &pushService{got: make(chan []byte, 16)}
	p.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !strings.HasPrefix(r.Header.Get("Authorization"), "vapid t=") || r.Header.Get("Content-Encoding") != "aes128gcm" {
			w.WriteHeader(400)
			return
		}
		p.got <- b
		w.WriteHeader(201)
	}))
	t.Cleanup(p.Close)
	return p
}

// subscriber is a browser's push subscription with its private key.
type subscriber struct {
	priv *ecdh.PrivateKey
	auth []byte
	sub  webpush.Subscription
}

func newSubscriber(t *testing.T, endpoint string) *subscriber {
	k, _ := ecdh.P256().GenerateKey(rand.Reader)
	s := &subscriber{priv: k, auth: make([]byte, 16)}
	rand.Read(s.auth)
	s.sub.Endpoint = endpoint
	s.sub.Keys.P256dh = base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes())
	s.sub.Keys.Auth = base64.RawURLEncoding.EncodeToString(s.auth)
	return s
}

func (s *subscriber) json() string { b, _ := json.Marshal(s.sub); return string(b) }

// open decrypts an aes128gcm body (RFC 8291, the receiver's side, written out here
// apart from package webpush).
func (s *subscriber) open(t *testing.T, body []byte) map[string]string {
	t.Helper()
	salt, asPub, ct := body[:16], body[21:21+int(body[20])], body[21+int(body[20]):]
	peer, err := ecdh.P256().NewPublicKey(asPub)
	if err != nil {
		t.Fatal(err)
	}
	shared, _ := s.priv.ECDH(peer)
	info := append(append([]byte("WebPush: info\x00"), s.priv.PublicKey().Bytes()...), asPub...)
	ikm := hkdfKey(shared, s.auth, info, 32)
	cek, nonce := hkdfKey(ikm, salt, []byte("Content-Encoding: aes128gcm\x00"), 16), hkdfKey(ikm, salt, []byte("Content-Encoding: nonce\x00"), 12)
	plain := gcmOpen(t, cek, nonce, ct)
	plain = bytes.TrimRight(plain, "\x00")
	var m map[string]string
	if err := json.Unmarshal(plain[:len(plain)-1], &m); err != nil {
		t.Fatalf("payload %q: %v", plain, err)
	}
	return m
}

// TestPushToDevices: a paired device subscribes (only to a known push service, only from
// the app's origin) and is pushed a notification encrypted for its keys; once its token
// is revoked its subscription is dropped and nothing more is posted.
func TestPushToDevices(t *testing.T) {
	svc := newPushService(t)
	r := newRig(t, Config{Origins: []string{"https://box.example"}, PushServices: []string{"127.0.0.1"}, PushClient: svc.Client()})
	pushed := make(chan struct{}, 16)
	r.s.push.done = func() { pushed <- struct{}{} }
	c := r.client()
	if resp, _ := c.do("POST", "/api/v1/push/subscribe", "{}"); resp.StatusCode != 401 {
		t.Fatalf("unpaired subscribe: %d", resp.StatusCode)
	}
	c.pair("read")
	resp, body := c.do("GET", "/api/v1/push", "")
	var info PushInfo
	if json.Unmarshal([]byte(body), &info); resp.StatusCode != 200 || !info.Enabled || info.Key == "" {
		t.Fatalf("push info: %d %s", resp.StatusCode, body)
	}
	// Only a known push service: not an address of the device's choosing.
	evil := newSubscriber(t, "https://169.254.169.254/latest")
	if resp, body := c.do("POST", "/api/v1/push/subscribe", evil.json()); resp.StatusCode != 403 {
		t.Fatalf("subscribe to another host: %d %s", resp.StatusCode, body)
	}
	cross := *c
	cross.origin = "https://evil.example"
	sub := newSubscriber(t, svc.URL+"/push/1")
	if resp, _ := cross.do("POST", "/api/v1/push/subscribe", sub.json()); resp.StatusCode != 403 {
		t.Fatalf("cross-site subscribe: %d", resp.StatusCode)
	}
	if resp, body := c.do("POST", "/api/v1/push/subscribe", sub.json()); resp.StatusCode != 200 {
		t.Fatalf("subscribe: %d %s", resp.StatusCode, body)
	}

	r.s.Notify("w", "nudge: reviewer (w) is NEEDS_CONFIRMATION: Run rm -rf build?")
	<-pushed
	select {
	case b := <-svc.got:
		if m := sub.open(t, b); m["body"] != "nudge: reviewer (w) is NEEDS_CONFIRMATION: Run rm -rf build?" || m["workspace"] != "w" {
			t.Fatalf("payload %v", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing reached the push service")
	}

	// A screen's worth of text is cut to fit a push, never dropped.
	r.s.Notify("w", "nudge: reviewer (w) is ERROR: "+strings.Repeat("日本", 2000))
	<-pushed
	select {
	case b := <-svc.got:
		if m := sub.open(t, b); len([]rune(m["body"])) != maxPushText || !strings.HasSuffix(m["body"], "…") {
			t.Fatalf("long body: %d runes", len([]rune(m["body"])))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a long notification was not pushed")
	}

	list, _ := r.a.List(r.admin)
	if _, err := r.a.Revoke(r.admin, list[0].ID); err != nil {
		t.Fatal(err)
	}
	r.s.Notify("w", "nudge: trigger t1 to reviewer (w) failed: ACK_TIMEOUT")
	<-pushed
	if n := r.s.push.subscriptions(); n != 0 {
		t.Fatalf("a revoked device kept %d subscriptions", n)
	}
	select {
	case <-svc.got:
		t.Fatal("a revoked device was pushed to")
	default:
	}
}

// TestPushOffOverHTTP: a page served over plain HTTP is offered no push.
func TestPushOffOverHTTP(t *testing.T) {
	r := newRig(t, Config{})
	c := r.client()
	c.pair("read")
	if resp, body := c.do("GET", "/api/v1/push", ""); resp.StatusCode != 200 || !strings.Contains(body, `"enabled":false`) {
		t.Fatalf("push info: %d %s", resp.StatusCode, body)
	}
	sub := newSubscriber(t, "https://fcm.googleapis.com/fcm/send/x")
	if resp, _ := c.do("POST", "/api/v1/push/subscribe", sub.json()); resp.StatusCode != 404 {
		t.Fatalf("subscribe over HTTP: %d", resp.StatusCode)
	}
	r.s.Notify("w", "x") // nothing to do, never blocks
}

func hkdfKey(secret, salt, info []byte, n int) []byte {
	k, err := hkdf.Key(sha256.New, secret, salt, string(info), n)
	if err != nil {
		panic(err)
	}
	return k
}

func gcmOpen(t *testing.T, key, nonce, ct []byte) []byte {
	t.Helper()
	b, _ := aes.NewCipher(key)
	g, _ := cipher.NewGCM(b)
	p, err := g.Open(nil, nonce, ct, nil)
	if err != nil {
		t.Fatalf("decrypt: %v", err)
	}
	return p
}
