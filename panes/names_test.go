package panes

import (
	"errors"
	"strings"
	"testing"

	"github.com/nudgehq/nudge"
)

func TestValidNames(t *testing.T) {
	for _, ws := range []string{"a", "mobile_core", "A-9", strings.Repeat("x", 64)} {
		if err := ValidWorkspace(ws); err != nil {
			t.Errorf("workspace %q: %v", ws, err)
		}
	}
	for _, ws := range []string{"", "a.b", "a:b", "a b", "a/b", "ä", strings.Repeat("x", 65), "a;b"} {
		var ne *nudge.Error
		if err := ValidWorkspace(ws); !errors.As(err, &ne) || ne.Code != nudge.BadRequest {
			t.Errorf("workspace %q: got %v, want BAD_REQUEST", ws, err)
		}
	}
	for _, r := range []string{"reviewer", "r.v2", "a_b-c"} {
		if err := ValidRole(r); err != nil {
			t.Errorf("role %q: %v", r, err)
		}
	}
	for _, r := range []string{"", ".", "..", "a:b", "a b", "a'b", strings.Repeat("r", 65)} {
		if err := ValidRole(r); err == nil {
			t.Errorf("role %q accepted", r)
		}
	}
}

func TestNaming(t *testing.T) {
	if got := TargetString("mobile_core", "reviewer", 0); got != "agents_mobile_core:reviewer.0" {
		t.Errorf("got %q", got)
	}
	if RuntimeID("a_b", "c") == RuntimeID("a", "b_c") {
		t.Error("runtime ids collide")
	}
}

func TestParseTarget(t *testing.T) {
	ok := []struct {
		in   string
		want Target
	}{
		{"%0", Target{PaneID: "%0"}},
		{"%12", Target{PaneID: "%12"}},
		{"agents_ws:reviewer.0", Target{Session: "agents_ws", Window: "reviewer", Pane: 0}},
		{"agents_ws:r.v2.3", Target{Session: "agents_ws", Window: "r.v2", Pane: 3}},
		{"consilio-ps", Target{Session: "consilio-ps"}}, // a session alone (seed 004's send-keys -t): its active pane
		{"consilio-ps:0.0", Target{Session: "consilio-ps", Window: "0", Pane: 0}},
	}
	for i, tt := range ok {
		got, err := ParseTarget(tt.in)
		if err != nil || got != tt.want || got.String() != tt.in {
			t.Errorf("#%d: got %+v, %v, want %+v", i, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "%", "%abc", "%-1", "%+1", "% 1", "agents_ws:", "a.b", ":r.0",
		"agents_ws:reviewer", "agents_ws:reviewer.", "agents_ws:.0", "agents_ws:r.x", "agents_ws:r.-1"} {
		var ne *nudge.Error
		if _, err := ParseTarget(in); !errors.As(err, &ne) || ne.Code != nudge.BadRequest {
			t.Errorf("%q: got %v, want BAD_REQUEST", in, err)
		}
	}
}
