package main

// Runtime tokens: a spawned runtime gets a token for itself only (verbs ack, heartbeat,
// read; its workspace; its runtime id and registration epoch) in NUDGE_RUNTIME_TOKEN.
// Before it expires the daemon mints a new one and stores it in the workspace session's
// environment, NUDGE_RUNTIME_TOKEN_<hex(role)>, through the control connection. A running
// process never sees a changed environment, so `nudge ack`/`nudge heartbeat` read the
// fresh token from tmux (show-environment) when the inherited one is about to expire.
// Deregistering a runtime deletes its epoch: every token minted for it is refused at once.

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/panes"
	"github.com/nudgehq/nudge/store"
)

// runtimeTokenVar is the session environment variable holding a role's renewed token.
func runtimeTokenVar(role string) string {
	return "NUDGE_RUNTIME_TOKEN_" + strings.ToUpper(hex.EncodeToString([]byte(role)))
}

// epoch returns a runtime's registration epoch, creating one if it has none.
func (a *authority) epoch(id string) (string, error) {
	b, err := a.db.GetMeta(metaRuntimeEpoch + id)
	if err == nil {
		return string(b), nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	e := auth.NewID()
	return e, a.db.PutMeta(metaRuntimeEpoch+id, []byte(e))
}

// mintRuntime returns a fresh token for rt.
func (a *authority) mintRuntime(rt nudge.Runtime) (string, error) {
	epoch, err := a.epoch(rt.RuntimeID)
	if err != nil {
		return "", err
	}
	now := a.now()
	tok, err := a.sign(auth.Claims{ID: auth.NewID(), Subject: "runtime:" + rt.RuntimeID, Workspaces: []string{rt.WorkspaceID},
		Verbs: []string{verbAck, verbHeartbeat, verbRead}, RuntimeID: rt.RuntimeID, Epoch: epoch,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(a.ttl).Unix()})
	if err != nil {
		return "", err
	}
	a.rtMu.Lock()
	a.rtTok[rt.RuntimeID] = now
	a.rtMu.Unlock()
	return tok, nil
}

// runtimeTokenEnv is the NUDGE_RUNTIME_TOKEN entry of a spawned pane's environment.
func (d *daemon) runtimeTokenEnv(rt nudge.Runtime) []string {
	if d.auth == nil {
		return nil
	}
	tok, err := d.auth.mintRuntime(rt)
	if err != nil {
		d.log.Error("mint runtime token", "runtime_id", rt.RuntimeID, "err", err)
		return nil
	}
	return []string{"NUDGE_RUNTIME_TOKEN=" + tok}
}

// start runs the renewal loop until Close.
func (a *authority) start(d *daemon) {
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel, a.done = cancel, make(chan struct{})
	tick := min(max(a.ttl/8, 50*time.Millisecond), time.Minute)
	go func() {
		defer close(a.done)
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			d.renewRuntimeTokens(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Close stops the renewal loop and waits for it. It is idempotent and nil-safe.
func (a *authority) Close() {
	if a == nil || a.cancel == nil {
		return
	}
	a.cancel()
	<-a.done
}

// renewRuntimeTokens re-mints the token of every live managed runtime past half its
// life (or never minted by this daemon) and stores it in its session's environment.
func (d *daemon) renewRuntimeTokens(ctx context.Context) {
	now := d.auth.now()
	for _, rt := range d.reg.List() {
		if !rt.Managed || !panes.Live(rt.Status) || ctx.Err() != nil {
			continue
		}
		d.auth.rtMu.Lock()
		at, ok := d.auth.rtTok[rt.RuntimeID]
		d.auth.rtMu.Unlock()
		if ok && now.Sub(at) < d.auth.ttl/2 {
			continue
		}
		tok, err := d.auth.mintRuntime(rt)
		if err == nil {
			err = d.setSessionEnv(ctx, rt.WorkspaceID, runtimeTokenVar(rt.Role), tok)
		}
		if err != nil {
			d.log.Warn("renew runtime token", "runtime_id", rt.RuntimeID, "err", err)
			d.auth.rtMu.Lock()
			delete(d.auth.rtTok, rt.RuntimeID) // try again next tick
			d.auth.rtMu.Unlock()
		}
	}
}

// setSessionEnv sets (or with val "" unsets) a variable in agents_<ws>'s environment.
func (d *daemon) setSessionEnv(ctx context.Context, ws, name, val string) error {
	conn, err := d.reg.Conn(ws)
	if err != nil {
		return err
	}
	target, err := controlmode.Quote("=" + panes.SessionName(ws))
	if err != nil {
		return err
	}
	cmd := "set-environment -t " + target + " -u " + name
	if val != "" {
		q, err := controlmode.Quote(val)
		if err != nil {
			return err
		}
		cmd = "set-environment -t " + target + " " + name + " " + q
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = conn.Do(ctx, cmd)
	return err
}

// revokeRuntime deletes the runtime's epoch (its tokens fail from the next request) and
// removes the renewed token from its session.
func (a *authority) revokeRuntime(d *daemon, id string) {
	if err := a.db.DeleteMeta(metaRuntimeEpoch + id); err != nil && !errors.Is(err, store.ErrNotFound) {
		d.log.Error("revoke runtime token", "runtime_id", id, "err", err)
	}
	a.rtMu.Lock()
	delete(a.rtTok, id)
	a.rtMu.Unlock()
	ws, role, ok := strings.Cut(strings.TrimPrefix(id, "rt_"), ".")
	if ok {
		if err := d.setSessionEnv(context.Background(), ws, runtimeTokenVar(role), ""); err != nil {
			d.log.Debug("unset runtime token", "runtime_id", id, "err", err)
		}
	}
}

// runtimeToken is the token a client inside a managed pane uses: $NUDGE_RUNTIME_TOKEN, or,
// when that expires within a minute, the renewed one from the session's environment.
func runtimeToken(env *cliEnv) string {
	tok := env.getenv("NUDGE_RUNTIME_TOKEN")
	if tok == "" {
		return ""
	}
	if cl, err := auth.Peek(tok); err == nil && time.Until(cl.Expiry()) > time.Minute {
		return tok
	}
	if fresh := renewedToken(env); fresh != "" {
		return fresh
	}
	return tok
}

// renewedToken reads NUDGE_RUNTIME_TOKEN_<role> from the tmux session of $TMUX_PANE.
func renewedToken(env *cliEnv) string {
	id, pane, tmux := env.getenv("NUDGE_RUNTIME_ID"), env.getenv("TMUX_PANE"), env.getenv("TMUX")
	_, role, ok := strings.Cut(id, ".")
	if !ok || pane == "" || tmux == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	name := runtimeTokenVar(role)
	cmd := exec.CommandContext(ctx, "tmux", "show-environment", "-t", pane, name)
	cmd.Env = append(os.Environ(), "TMUX="+tmux)
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), name+"=")
	if !ok {
		return ""
	}
	return v
}
