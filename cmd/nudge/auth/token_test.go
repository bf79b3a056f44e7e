package auth

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

func claims(now time.Time) Claims {
	return Claims{ID: NewID(), Subject: "orchestrator", Workspaces: []string{"mobile_core"},
		Verbs: []string{VerbTrigger, VerbSpawn}, IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix()}
}

func TestRoundTrip(t *testing.T) {
	now := time.Now()
	c := claims(now)
	tok, err := Sign(testKey, c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(testKey, tok, now)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != c.ID || got.Subject != c.Subject || strings.Join(got.Verbs, ",") != "trigger,spawn" || got.Workspaces[0] != "mobile_core" {
		t.Fatalf("got %+v, want %+v", got, c)
	}
}

func TestParseErrors(t *testing.T) {
	now := time.Now()
	tok, err := Sign(testKey, claims(now))
	if err != nil {
		t.Fatal(err)
	}
	head, sig, _ := strings.Cut(tok[len(prefix):], ".")
	// A payload re-signed with another key claims every workspace.
	other := []byte("another key, 32 bytes long......")
	forged, _ := Sign(other, Claims{ID: NewID(), Subject: "x", Workspaces: []string{"*"}, Verbs: []string{VerbAdmin},
		IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix()})
	flip := []byte(tok)
	flip[len(prefix)+3] ^= 1
	for _, tc := range []struct {
		name string
		tok  string
		want error
		now  time.Time
	}{
		{"Empty", "", ErrMalformed, now},
		{"Prefix", "nudge1.", ErrMalformed, now},
		{"NoSig", prefix + head, ErrMalformed, now},
		{"ExtraPart", prefix + head + ".x." + sig, ErrMalformed, now},
		{"PayloadBitFlip", string(flip), ErrSignature, now},
		{"SigTruncated", tok[:len(tok)-2], ErrMalformed, now},
		{"OtherKey", forged, ErrSignature, now},
		{"SwappedPayload", prefix + forged[len(prefix):strings.LastIndexByte(forged, '.')] + "." + sig, ErrSignature, now},
		{"Expired", tok, ErrExpired, now.Add(2 * time.Hour)},
		{"Oversize", prefix + strings.Repeat("A", MaxTokenLen), ErrMalformed, now},
		// The base64 decoder skips CR and LF: a line break inside the signature must not
		// give the same token a second spelling.
		{"SigLineBreak", prefix + head + "." + sig[:7] + "\r\n" + sig[7:], ErrMalformed, now},
		{"TrailingNewline", tok + "\n", ErrMalformed, now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse(testKey, tc.tok, tc.now); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestSignRefusesBadClaims(t *testing.T) {
	now := time.Now()
	for name, mut := range map[string]func(*Claims){
		"NoVerbs":       func(c *Claims) { c.Verbs = nil },
		"UnknownVerb":   func(c *Claims) { c.Verbs = []string{"root"} },
		"NoWorkspace":   func(c *Claims) { c.Workspaces = nil },
		"BadWorkspace":  func(c *Claims) { c.Workspaces = []string{"a;b"} },
		"NoExpiry":      func(c *Claims) { c.ExpiresAt = 0 },
		"BadSubject":    func(c *Claims) { c.Subject = "a b" },
		"RuntimeNoEpoc": func(c *Claims) { c.RuntimeID = "rt_a.b" },
	} {
		c := claims(now)
		mut(&c)
		if _, err := Sign(testKey, c); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	if _, err := Sign(testKey[:16], claims(now)); err == nil {
		t.Error("short key accepted")
	}
}

func TestDecodeJSON(t *testing.T) {
	type body struct {
		A string `json:"a"`
	}
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`{"a":"x"}`, true},
		{" \n{\"a\":\"x\"}\n", true},
		{`null`, false},
		{`[]`, false},
		{`"s"`, false},
		{`{"a":"x","b":1}`, false},
		{`{"a":"x"}{"a":"y"}`, false},
		{`{"a":"x"} x`, false},
		{`{"a":`, false},
		{``, false},
	} {
		var b body
		if err := DecodeJSON(strings.NewReader(tc.in), &b); (err == nil) != tc.ok {
			t.Errorf("%q: got %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}
