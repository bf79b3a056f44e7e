package hub

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/nudgehq/nudge/inject"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns their paths.
func selfSigned(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "nudge hub test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert = writeFile(t, dir, "cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	key = writeFile(t, dir, "key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})))
	return cert, key
}

// TestTLS: a member joins a hub that speaks TLS, trusting its certificate from --hub-ca,
// with an NKey identity; a trigger goes through.
func TestTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	seed, pub := newNKey(t)
	cfg := DefaultConfig()
	cfg.Listen, cfg.HostName, cfg.TLSCert, cfg.TLSKey = "127.0.0.1:0", "hub", cert, key
	cfg.Users = writeFile(t, dir, "users", "a "+pub+"\n")
	hub := openMember(t, cfg, "wh")
	mc := DefaultConfig()
	mc.URL, mc.HostName, mc.CA = "tls://"+hub.f.Addr(), "a", cert
	mc.Credentials = writeFile(t, dir, "a.cred", "a "+seed+"\n")
	a := openMember(t, mc, "wa")
	waitFor(t, "a's claim", func() bool { h, _ := hub.f.HostOf("wa"); return h == "a" })
	res, err := deps(hub).Triggers.Submit(context.Background(), inject.Request{TriggerID: "tls-1", Workspace: "wa", Agent: "a", Prompt: "p"})
	if err != nil || res.Trigger.Host != "a" {
		t.Fatalf("route: %+v %v", res.Trigger, err)
	}
	waitFor(t, "a took tls-1", func() bool { return a.local.count("tls-1") == 1 })
}
