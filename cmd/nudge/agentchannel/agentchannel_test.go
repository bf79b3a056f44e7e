package agentchannel

import (
	"context"
	"errors"
	"testing"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/panes"
)

// A runtime goes through a channel only when its profile names one, it runs here and its
// session is known, and the channel is there; otherwise the trigger is typed.
func TestDeliverFallsBackToTyping(t *testing.T) {
	home := t.TempDir()
	c := &Channels{
		Profiles: map[string]panes.Profile{"codex": {Name: "codex", Channel: panes.ChannelCodex}, "claude": {Name: "claude"}},
		Getenv:   func(k string) string { return map[string]string{"HOME": home}[k] },
	}
	for _, rt := range []nudge.Runtime{
		{Agent: "claude", SessionID: "s"},
		{Agent: "codex"},
		{Agent: "codex", SessionID: "s", Host: "build@ci"},
		{Agent: "codex", SessionID: "s"}, // no socket under ~/.codex
	} {
		if _, err := c.Deliver(context.Background(), rt, "x"); !errors.Is(err, inject.ErrNoChannel) {
			t.Errorf("%+v: %v, want ErrNoChannel", rt, err)
		}
	}
}

func TestCodexHome(t *testing.T) {
	env := map[string]string{"HOME": "/h"}
	c := &Channels{Getenv: func(k string) string { return env[k] }}
	if got := c.codexHome(panes.Profile{}); got != "/h/.codex" {
		t.Fatal(got)
	}
	env["CODEX_HOME"] = "/c"
	if got := c.codexHome(panes.Profile{}); got != "/c" {
		t.Fatal(got)
	}
	if got := c.codexHome(panes.Profile{Env: []string{"CODEX_HOME=/p"}}); got != "/p" {
		t.Fatal(got)
	}
}
