package auth

import (
	"context"
	"testing"
	"time"
)

func TestCallerAllow(t *testing.T) {
	all := Caller{Subject: "uid:1"}
	scoped := Caller{Subject: "o", Workspaces: []string{"a"}, Verbs: []string{VerbTrigger}}
	rtTok := Caller{Subject: "r", Workspaces: []string{"a"}, Verbs: []string{VerbAck, VerbRead}, RuntimeID: "rt_a.x"}
	for i, tc := range []struct {
		c    Caller
		verb string
		ws   string
		ok   bool
	}{
		{all, VerbAdmin, "any", true},
		{scoped, VerbTrigger, "a", true},
		{scoped, VerbRead, "a", true}, // any verb implies read
		{scoped, VerbTrigger, "b", false},
		{scoped, VerbSpawn, "a", false},
		{rtTok, VerbAck, "a", true},
	} {
		if err := tc.c.Allow(tc.verb, tc.ws); (err == nil) != tc.ok {
			t.Errorf("#%d: %s %s on %q: got %v, want ok=%v", i, tc.c.Subject, tc.verb, tc.ws, err, tc.ok)
		}
	}
	if rtTok.AllowRuntime(VerbAck, "rt_a.y", "a") == nil || rtTok.AllowRuntime(VerbRead, "rt_a.y", "a") != nil {
		t.Error("a runtime token acts on another runtime, or cannot read it")
	}
	if rtTok.AllowTrigger(VerbAck, "t1", "rt_a.y", "a") == nil || rtTok.AllowTrigger(VerbAck, "t1", "rt_a.x", "a") != nil {
		t.Error("a runtime token's trigger scope is wrong")
	}
	if all.Sees("") != true || scoped.Sees("") || !scoped.Sees("a") || scoped.Sees("b") {
		t.Error("Sees")
	}
	exp := time.Now().Add(time.Hour)
	short := Caller{Subject: "s", Expires: exp}
	if short.Covers(Claims{ExpiresAt: exp.Add(time.Hour).Unix()}) == nil {
		t.Error("a caller issued a token that outlives its own")
	}
}

func TestCallerContext(t *testing.T) {
	if _, ok := CallerFrom(context.Background()); ok {
		t.Fatal("a caller in an empty context")
	}
	c := Caller{Subject: "x", UID: 7}
	got, ok := CallerFrom(WithCaller(context.Background(), c))
	if !ok || got.Subject != "x" || got.UID != 7 {
		t.Fatalf("got %+v %v", got, ok)
	}
}

func TestWorkspaceOfRuntime(t *testing.T) {
	for in, want := range map[string]string{"rt_ws.role": "ws", "rt_ws": "", "x_ws.r": "", "rt_a.b.c": "a"} {
		if got := WorkspaceOfRuntime(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]time.Duration{"10/min": time.Minute, "5/30s": 30 * time.Second, "1/h": time.Hour} {
		if _, per, err := ParseRate(in); err != nil || per != want {
			t.Errorf("%q: %v %v", in, per, err)
		}
	}
	for _, bad := range []string{"10", "0/min", "x/min", "1/fortnight"} {
		if _, _, err := ParseRate(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
