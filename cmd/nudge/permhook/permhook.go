// Package permhook holds the permission requests Claude Code hands to nudge through its
// PermissionRequest hook, so that a dialog nudge answers (`nudge approve`/`deny`, the API,
// the web view, a policy rule) is answered as the agent asks to be answered, not with keys
// typed into its screen.
//
// A Claude Code session nudge spawns loads a settings file of nudge's (panes,
// permission_hook_flag) whose PermissionRequest hook runs `nudge hook claude-permission`.
// Claude Code draws its dialog as always and runs the hook beside it: whichever answers
// first, the person at the screen or the hook, decides. The hook posts the request to the
// daemon with the runtime's own token and waits; the Keeper holds it until nudge answers
// the dialog on the screen, the dialog leaves the screen (answered there), the runtime
// ends or the hook gives up. The hook then prints the decision, or nothing (Claude Code's
// dialog decides).
//
// What the hook says is the agent's word, and the agent may be hostile: a request is
// only ever for the runtime whose token posted it, and it is answered only when the
// dialog the screen shows asks for the very command the request names (one request,
// exactly), so a request with no dialog behind it is never answered, and a dialog is
// never answered through a request of another command.
package permhook

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/panes"
)

// Backend names an answer given through Claude Code's PermissionRequest hook.
const Backend = "claude_permission_hook"

// Request is one permission the agent asks of its operator, as its hook states it
// (Command: what a Bash tool asks to run; "" for other tools).
type Request = api.PermissionRequest

// Decision is what the hook tells the agent: Behavior "allow" or "deny" (with Message,
// the operator's reason, and the turn stopped as Claude Code's own "No" stops it), or ""
// (no answer from nudge: the agent's own dialog decides).
type Decision = api.PermissionDecision

// Config is what a Keeper needs.
type Config struct {
	// Bus brings the readiness of the runtimes (a dialog shown, a dialog gone) and their
	// records (a runtime that ended).
	Bus    *nudge.Bus
	Logger hclog.Logger
	// Audit records each answer given through the hook; nil: not recorded.
	Audit func(nudge.AuditRecord)
	// Hold bounds how long a request is held; 0 means a day (the hook's own timeout).
	Hold time.Duration
}

// Keeper holds the open requests of every runtime. Close releases them all.
type Keeper struct {
	cfg Config
	sub *nudge.Client

	mu     sync.Mutex
	seq    int
	open   map[string][]*held       // runtime id → its open requests, oldest first
	dialog map[string]*nudge.Dialog // runtime id → the dialog its screen showed last
	closed bool
}

// held is one open request and the channel its answer goes on (buffered 1).
type held struct {
	id      string
	req     Request
	arrived time.Time
	answer  chan Decision
}

// maxOpen bounds the open requests held per runtime: a hook called over and over (by a
// hostile agent itself) releases its oldest.
const maxOpen = 8

// Open starts a Keeper.
func Open(cfg Config) *Keeper {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Hold <= 0 {
		cfg.Hold = 24 * time.Hour
	}
	k := &Keeper{cfg: cfg, open: map[string][]*held{}, dialog: map[string]*nudge.Dialog{}}
	k.sub = nudge.NewClient(cfg.Bus, "permhook", 256)
	nudge.Subscribe(k.sub, k.readiness)
	nudge.Subscribe(k.sub, func(ev nudge.RuntimeChanged) {
		if !panes.Live(ev.Runtime.Status) {
			k.releaseAll(ev.Runtime.RuntimeID)
		}
	})
	return k
}

// Close releases every open request (their hooks print nothing) and stops listening.
func (k *Keeper) Close() {
	if k == nil {
		return
	}
	k.sub.Close()
	k.mu.Lock()
	k.closed = true
	ids := make([]string, 0, len(k.open))
	for id := range k.open {
		ids = append(ids, id)
	}
	k.mu.Unlock()
	for _, id := range ids {
		k.releaseAll(id)
	}
}

// Ask holds the request rt's hook posted until it is answered, released, held for
// Config.Hold, or ctx ends (the hook went away), and returns the decision ("" = none).
func (k *Keeper) Ask(ctx context.Context, rt nudge.Runtime, req Request) (Decision, error) {
	if k == nil || !panes.Live(rt.Status) {
		return Decision{}, nil
	}
	h := &held{req: req, arrived: time.Now(), answer: make(chan Decision, 1)}
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return Decision{}, nil
	}
	k.seq++
	h.id = rt.RuntimeID + "#" + strconv.Itoa(k.seq)
	open := append(k.open[rt.RuntimeID], h)
	var dropped []*held
	if len(open) > maxOpen {
		dropped, open = open[:len(open)-maxOpen], open[len(open)-maxOpen:]
	}
	k.open[rt.RuntimeID] = open
	k.mu.Unlock()
	for _, d := range dropped {
		d.answer <- Decision{}
	}
	k.cfg.Logger.Debug("permhook: a request held", "runtime", rt.RuntimeID, "tool", req.Tool, "command", req.Command)
	timer := time.NewTimer(k.cfg.Hold)
	defer timer.Stop()
	select {
	case d := <-h.answer:
		return d, nil
	case <-ctx.Done():
		k.take(rt.RuntimeID, h)
		return Decision{}, ctx.Err()
	case <-timer.C:
		k.take(rt.RuntimeID, h)
		return Decision{}, nil
	}
}

// Held lists the requests runtime id has open (for tests and the record).
func (k *Keeper) Held(id string) []Request {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []Request
	for _, h := range k.open[id] {
		out = append(out, h.req)
	}
	return out
}

// take removes h from id's open requests; false when it was not there (answered or
// released already).
func (k *Keeper) take(id string, h *held) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	open := k.open[id]
	i := slices.Index(open, h)
	if i < 0 {
		return false
	}
	k.open[id] = slices.Delete(open, i, i+1)
	if len(k.open[id]) == 0 {
		delete(k.open, id)
	}
	return true
}

// releaseAll releases every open request of id: their hooks print nothing.
func (k *Keeper) releaseAll(id string) {
	k.mu.Lock()
	open := k.open[id]
	delete(k.open, id)
	delete(k.dialog, id)
	k.mu.Unlock()
	for _, h := range open {
		h.answer <- Decision{}
	}
}

// readiness follows the dialog each runtime's screen shows. When a dialog leaves the
// screen (gone, or another in its place) it was answered there, or its turn ended: the
// requests held then are released, but one whose command the screen's new dialog asks
// for (the next request, come before the screen was read again). A request that came
// while no dialog had been seen yet waits for its dialog.
func (k *Keeper) readiness(ev nudge.ReadinessChanged) {
	k.mu.Lock()
	prev := k.dialog[ev.RuntimeID]
	if ev.Dialog != nil {
		d := *ev.Dialog
		k.dialog[ev.RuntimeID] = &d
	} else {
		delete(k.dialog, ev.RuntimeID)
	}
	if prev == nil || (ev.Dialog != nil && ev.Dialog.DialogID == prev.DialogID) {
		k.mu.Unlock()
		return
	}
	var released []*held
	open := k.open[ev.RuntimeID][:0:0]
	for _, h := range k.open[ev.RuntimeID] {
		if ev.Dialog != nil && ev.Dialog.Command != "" && h.req.Command == ev.Dialog.Command {
			open = append(open, h)
		} else {
			released = append(released, h)
		}
	}
	if len(open) == 0 {
		delete(k.open, ev.RuntimeID)
	} else {
		k.open[ev.RuntimeID] = open
	}
	k.mu.Unlock()
	for _, h := range released {
		h.answer <- Decision{}
	}
	if len(released) > 0 {
		k.cfg.Logger.Debug("permhook: the dialog left the screen; its requests released", "runtime", ev.RuntimeID, "released", len(released))
	}
}

// Answer answers, through the hook, the request behind dialog d that rt's screen shows,
// with option opt: d's approve option allows, its deny option denies with reason (the
// turn stops, as Claude Code's own "No" stops it). It returns the backend, or "" when it
// sent nothing (no single open request whose command is d's, an option that is neither
// or both, a dialog with no command): the caller then types the option's keys.
func (k *Keeper) Answer(_ context.Context, rt nudge.Runtime, d nudge.Dialog, opt nudge.DialogOption, reason string) (string, error) {
	if k == nil || opt.Key == "" || d.ApproveKey == d.DenyKey || d.Command == "" {
		return "", nil
	}
	dec := Decision{Behavior: "allow"}
	switch opt.Key {
	case d.ApproveKey:
	case d.DenyKey:
		dec = Decision{Behavior: "deny", Message: reason}
		if dec.Message == "" {
			dec.Message = "The operator denied this through nudge."
		}
	default:
		return "", nil
	}
	k.mu.Lock()
	var match *held
	for _, h := range k.open[rt.RuntimeID] {
		if h.req.Command != d.Command || (h.req.SessionID != "" && rt.SessionID != "" && h.req.SessionID != rt.SessionID) {
			continue
		}
		if match != nil {
			k.mu.Unlock()
			return "", nil // two requests of one command: which one the screen shows is not known
		}
		match = h
	}
	k.mu.Unlock()
	if match == nil {
		return "", nil
	}
	if !k.take(rt.RuntimeID, match) {
		return "", nil // released meanwhile: keys
	}
	match.answer <- dec
	k.cfg.Logger.Info("permhook: answered through Claude Code's PermissionRequest hook", "runtime", rt.RuntimeID, "decision", dec.Behavior, "command", match.req.Command)
	if k.cfg.Audit != nil {
		k.cfg.Audit(nudge.AuditRecord{Event: "approval_answered", RuntimeID: rt.RuntimeID, Workspace: rt.WorkspaceID, Subject: Backend,
			Reason: fmt.Sprintf("%s: %s %s %q in %s (dialog %s)", Backend, dec.Behavior, match.req.Tool, match.req.Command, match.req.Cwd, d.DialogID)})
	}
	return Backend, nil
}
