// Package agentchannel decides, per runtime, whether a trigger is handed to the agent
// through the agent's own channel (its profile's `channel`) rather than typed into its
// pane, and does it: for "codex", Codex's app-server control socket in the runtime's
// CODEX_HOME, with the session id nudge read from its record; for "claude", the
// messaging socket nudge opened for the session at launch (Dir); for "opencode", the
// HTTP server nudge had OpenCode open on a loopback port at launch. It implements
// inject.Channel; it keeps no state and starts no goroutine.
package agentchannel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/buildinfo"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/inject/native"
	"github.com/nudgehq/nudge/panes"
)

// BackendCodex is the receipt's delivery_backend of a prompt handed to Codex's app-server.
const BackendCodex = "codex_app_server"

// Channels is the inject.Channel of the daemon.
type Channels struct {
	Profiles map[string]panes.Profile
	Dir      string              // panes.Config.ChannelDir: the agents' channel sockets ("" = none)
	Version  string              // nudge's, in the client info the agent logs
	Getenv   func(string) string // the daemon's environment (nil: os.Getenv)
}

// Deliver implements inject.Channel: the runtime's profile must name a channel, the
// runtime must run on this machine and its session id and directory be known, and the
// session's thread must work in that directory (the app-server is shared: a session id
// naming another runtime's thread is refused); otherwise, or when the channel is not
// there or refuses, inject.ErrNoChannel (the prompt is typed).
func (c *Channels) Deliver(ctx context.Context, rt nudge.Runtime, text string) (string, error) {
	prof, ok := c.Profiles[rt.Agent]
	if ok && prof.Channel == panes.ChannelClaude && rt.Host == "" {
		return c.claude(ctx, rt, text)
	}
	if ok && prof.Channel == panes.ChannelOpenCode && rt.Host == "" {
		return c.opencode(ctx, rt, text)
	}
	switch {
	case !ok || prof.Channel != panes.ChannelCodex:
		return "", inject.ErrNoChannel
	case rt.Host != "":
		return "", fmt.Errorf("%w: the runtime runs on %s", inject.ErrNoChannel, rt.Host)
	case rt.SessionID == "":
		return "", fmt.Errorf("%w: no session id known yet", inject.ErrNoChannel)
	case rt.Dir == "":
		return "", fmt.Errorf("%w: the runtime's directory is not known (its thread cannot be told from another's)", inject.ErrNoChannel)
	}
	_, err := c.codex(prof).Queue(ctx, rt.SessionID, rt.Dir, text)
	if errors.Is(err, native.ErrUnavailable) || errors.Is(err, native.ErrRefused) {
		return "", fmt.Errorf("%w: %v", inject.ErrNoChannel, err)
	}
	return BackendCodex, err
}

// Withdraw implements inject.Channel: the prompt holding mark is taken out of the
// session's queue if it still waits there.
func (c *Channels) Withdraw(ctx context.Context, rt nudge.Runtime, mark string) (bool, error) {
	prof, ok := c.Profiles[rt.Agent]
	if !ok || prof.Channel != panes.ChannelCodex || rt.SessionID == "" || rt.Dir == "" {
		return false, inject.ErrNoChannel
	}
	return c.codex(prof).Withdraw(ctx, rt.SessionID, rt.Dir, mark)
}

// Codex is the app-server of rt's Codex: ok false when rt's profile has no Codex channel
// or rt runs on another host.
func (c *Channels) Codex(rt nudge.Runtime) (native.Codex, bool) {
	prof, ok := c.Profiles[rt.Agent]
	if !ok || prof.Channel != panes.ChannelCodex || rt.Host != "" {
		return native.Codex{}, false
	}
	return c.codex(prof), true
}

func (c *Channels) codex(prof panes.Profile) native.Codex {
	version := c.Version
	if version == "" {
		version = buildVersion()
	}
	return native.Codex{Home: c.codexHome(prof), Version: version}
}

// buildVersion is this binary's version, read once.
var buildVersion = sync.OnceValue(func() string { return buildinfo.Read("").Version })

// codexHome is CODEX_HOME as the runtime's Codex sees it: the profile's env, else the
// daemon's (the pane inherits it), else ~/.codex.
func (c *Channels) codexHome(prof panes.Profile) string {
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	home, codexHome := getenv("HOME"), getenv("CODEX_HOME")
	for _, kv := range prof.Env {
		if v, ok := strings.CutPrefix(kv, "CODEX_HOME="); ok {
			codexHome = v
		}
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	if codexHome != "" {
		return codexHome
	}
	return filepath.Join(home, ".codex")
}
