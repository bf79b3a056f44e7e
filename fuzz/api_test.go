package fuzz

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/inject"
)

var fuzzKey = []byte("fuzz-key-0123456789abcdef-0123456789")

// apiCorpus seeds FuzzAPIRequest: trigger bodies and token suffixes.
var apiCorpus = []struct{ body, tok string }{
	{`{"trigger_id":"t1","workspace":"w","agent":"a","prompt":"hi"}`, ""}, // plain
	{`{"workspace":"w","agent":"a","prompt":"x","caller":"root"}`, "x"},   // a json:"-" field
	{`{"prompt":"\u0000\u001b[2J$(id)` + "`id`" + `#{pane_id};"}`, "."},   // hostile text
	{`null`, "nudge1."},                                                                // not an object
	{`{"a":1}{"b":2}`, "nudge1.e30."},                                                  // trailing object
	{"{\"prompt\":\"\xff\xfe\"}", "nudge1.eyJqdGkiOiJ4In0.AAAA"},                       // invalid UTF-8
	{`{"ack_timeout_ms":1e400}`, strings.Repeat("A", 5000)},                            // overflow, oversize token
	{`  {"force_override":true,"reason":"r","override_intent":"x"}  `, "nudge1.%%.%%"}, // spaces, bad base64
	{`{"prompt":"a","prompt":"b","Prompt":"c"}`, ""},                                   // duplicate, case-folded
}

// FuzzAPIRequest runs the API's request decoding: the strict JSON decoder on a trigger
// body, and the token parser. Properties: no panic; a decoded body re-encodes to one that
// decodes to the same request; a token is accepted only if it is exactly one this key
// signed, and any single-byte change to a valid token is refused.
func FuzzAPIRequest(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	valid, err := auth.Sign(fuzzKey, auth.Claims{ID: "fuzz-token-1", Subject: "orchestrator", Workspaces: []string{"w"},
		Verbs: []string{auth.VerbTrigger}, IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix()})
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range apiCorpus {
		f.Add([]byte(c.body), c.tok, uint16(0), byte(0))
	}
	f.Add([]byte(`{}`), valid, uint16(10), byte(1))
	f.Fuzz(func(t *testing.T, body []byte, tok string, pos uint16, flip byte) {
		var req inject.Request
		if err := auth.DecodeJSON(bytes.NewReader(body), &req); err == nil {
			if req.Caller != "" || req.CallerUID != 0 || req.ScheduleID != "" {
				t.Fatalf("body set a server-side field: %+v", req)
			}
			again, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			var back inject.Request
			if err := auth.DecodeJSON(bytes.NewReader(again), &back); err != nil || back != req {
				t.Fatalf("re-decode: %v: %+v != %+v", err, back, req)
			}
		}
		if cl, err := auth.Parse(fuzzKey, tok, now); err == nil && tok != valid {
			// Another accepted token must be one the key signed: re-signing its claims
			// must reproduce it byte for byte.
			if re, err := auth.Sign(fuzzKey, cl); err != nil || re != tok {
				t.Fatalf("accepted a token the key did not sign: %q", tok)
			}
		}
		if flip != 0 {
			b := []byte(valid)
			b[int(pos)%len(b)] ^= flip
			if _, err := auth.Parse(fuzzKey, string(b), now); err == nil {
				t.Fatalf("accepted a tampered token (byte %d ^ %#x): %q", int(pos)%len(b), flip, b)
			}
		}
		if _, err := auth.Parse(fuzzKey, valid, now); err != nil {
			t.Fatal(err)
		}
		if _, err := auth.Parse(fuzzKey, valid, now.Add(2*time.Hour)); !errors.Is(err, auth.ErrExpired) {
			t.Fatalf("expired token: %v", err)
		}
	})
}
