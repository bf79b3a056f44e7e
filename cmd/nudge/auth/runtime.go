package auth

// Runtime tokens: a spawned runtime gets a token for itself only (verbs ack, heartbeat,
// read; its workspace; its runtime id and registration epoch) in NUDGE_RUNTIME_TOKEN.
// Before it expires the authority mints a new one and stores it in the pane's user
// option RuntimeTokenOption, through the control connection. A running process never
// sees a changed environment, so `nudge ack` and `nudge heartbeat` read the fresh token
// from tmux (show-options) when the inherited one is about to expire. Deregistering a
// runtime deletes its epoch: every token minted for it is refused at once.
//
// Not the session environment, where daemons before this one kept it
// (RuntimeTokenVar): tmux hands that to every program started in the session later, so
// a runtime spawned or restarted there got every other role's renewed token. A copy
// left there is removed at the next renewal.

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/nudgehq/nudge/store"
)

// RuntimeTokenOption is the pane user option holding a runtime's renewed token.
const RuntimeTokenOption = "@nudge_runtime_token"

// RuntimeTokenVar is the session environment variable where daemons before this one kept a
// role's renewed token: removed at renewal, still read by a client as a last resort.
func RuntimeTokenVar(role string) string {
	return "NUDGE_RUNTIME_TOKEN_" + strings.ToUpper(hex.EncodeToString([]byte(role)))
}

// LiveRuntime is a live managed runtime, as the renewal loop needs it.
type LiveRuntime struct {
	ID, Workspace, Role string
}

// Runtimes is what the renewal loop consumes: the live managed runtimes, a way to set (or
// with value "" unset) a user option of a runtime's pane, and one to unset a variable of
// a workspace session's environment.
type Runtimes interface {
	LiveRuntimes() []LiveRuntime
	SetPaneOption(ctx context.Context, runtimeID, name, value string) error
	SetSessionEnv(ctx context.Context, workspace, name, value string) error
}

// renewal is the runtime-token state: when each runtime's current token was minted, and
// the renewal goroutine.
type renewal struct {
	mu     sync.Mutex
	minted map[string]time.Time // runtime id -> when its current token was minted
	rts    Runtimes
	cancel context.CancelFunc
	done   chan struct{}
}

func (r *renewal) forgetAll() {
	r.mu.Lock()
	clear(r.minted)
	r.mu.Unlock()
}

func (r *renewal) forget(id string) {
	r.mu.Lock()
	delete(r.minted, id)
	r.mu.Unlock()
}

// epoch returns a runtime's registration epoch, creating one if it has none.
func (a *Authority) epoch(id string) (string, error) {
	b, err := a.db.GetMeta(metaRuntimeEpoch + id)
	if err == nil {
		return string(b), nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	e := NewID()
	return e, a.db.PutMeta(metaRuntimeEpoch+id, []byte(e))
}

// MintRuntime returns a fresh token for runtime id of workspace ws.
func (a *Authority) MintRuntime(id, ws string) (string, error) {
	epoch, err := a.epoch(id)
	if err != nil {
		return "", err
	}
	now := a.now()
	tok, err := a.Sign(Claims{ID: NewID(), Subject: "runtime:" + id, Workspaces: []string{ws},
		Verbs: []string{VerbAck, VerbHeartbeat, VerbRead}, RuntimeID: id, Epoch: epoch,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(a.cfg.RuntimeTokenTTL).Unix()})
	if err != nil {
		return "", err
	}
	a.rt.mu.Lock()
	a.rt.minted[id] = now
	a.rt.mu.Unlock()
	return tok, nil
}

// Start runs the renewal loop on rts until Close. Call it once.
func (a *Authority) Start(rts Runtimes) {
	ctx, cancel := context.WithCancel(context.Background())
	a.rt.rts, a.rt.cancel, a.rt.done = rts, cancel, make(chan struct{})
	tick := min(max(a.cfg.RuntimeTokenTTL/8, 50*time.Millisecond), time.Minute)
	go func() {
		defer close(a.rt.done)
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			a.renew(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Close stops the renewal loop and waits for it. It is idempotent and nil-safe.
func (a *Authority) Close() {
	if a == nil || a.rt.cancel == nil {
		return
	}
	a.rt.cancel()
	<-a.rt.done
}

// renew re-mints the token of every live managed runtime past half its life (or never
// minted by this daemon) and stores it in its pane's option, removing a copy an older
// daemon left in the session environment.
func (a *Authority) renew(ctx context.Context) {
	now := a.now()
	for _, rt := range a.rt.rts.LiveRuntimes() {
		if ctx.Err() != nil {
			return
		}
		a.rt.mu.Lock()
		at, ok := a.rt.minted[rt.ID]
		a.rt.mu.Unlock()
		if ok && now.Sub(at) < a.cfg.RuntimeTokenTTL/2 {
			continue
		}
		tok, err := a.MintRuntime(rt.ID, rt.Workspace)
		if err == nil {
			err = a.rt.rts.SetPaneOption(ctx, rt.ID, RuntimeTokenOption, tok)
		}
		if err != nil {
			a.log.Warn("renew runtime token", "runtime_id", rt.ID, "err", err)
			a.rt.forget(rt.ID) // try again next tick
			continue
		}
		if err := a.rt.rts.SetSessionEnv(ctx, rt.Workspace, RuntimeTokenVar(rt.Role), ""); err != nil {
			a.log.Debug("remove an older daemon's runtime token from the session", "runtime_id", rt.ID, "err", err)
		}
	}
}

// RevokeRuntime deletes the runtime's epoch (its tokens fail from the next request) and
// removes the renewed token from its pane (when the registry still knows the pane) and
// from its session. Nil-safe.
func (a *Authority) RevokeRuntime(ctx context.Context, id string) {
	if a == nil {
		return
	}
	if err := a.db.DeleteMeta(metaRuntimeEpoch + id); err != nil && !errors.Is(err, store.ErrNotFound) {
		a.log.Error("revoke runtime token", "runtime_id", id, "err", err)
	}
	a.rt.forget(id)
	ws, role, ok := strings.Cut(strings.TrimPrefix(id, "rt_"), ".")
	if a.rt.rts != nil {
		if err := a.rt.rts.SetPaneOption(ctx, id, RuntimeTokenOption, ""); err != nil {
			a.log.Debug("unset runtime token", "runtime_id", id, "err", err)
		}
	}
	if ok && a.rt.rts != nil {
		if err := a.rt.rts.SetSessionEnv(ctx, ws, RuntimeTokenVar(role), ""); err != nil {
			a.log.Debug("unset runtime token", "runtime_id", id, "err", err)
		}
	}
}
