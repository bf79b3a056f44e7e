package panes

import (
	"context"
	"fmt"

	"github.com/nudgehq/nudge"
)

// RegisterRequest adopts an existing pane.
type RegisterRequest struct {
	Workspace, Role string
	Agent           string // profile name; "" means "codex"
	AgentID         string // "" means Role
	Target          string // "agents_ws:role.0" or "%N"; the pane must be in agents_<ws>
	SessionID       string
	Unmanaged       bool   // tracked but never restarted, and refused for injection (UNMANAGED_RUNTIME)
	Host            string // ssh destination of the workspace's tmux; "" means the workspace's host (local for a new one)
	PID             int    // when not 0, the pane's process must be this one (the caller's view of it)
}

// register is Registry.Register.
func (l *launcher) register(ctx context.Context, req RegisterRequest) (nudge.Runtime, error) {
	defer l.recs.db.Flush() // durable when it returns
	prof, err := l.checkNames(req.Workspace, req.Role, &req.Agent)
	if err != nil {
		return nudge.Runtime{}, err
	}
	tgt, err := ParseTarget(req.Target)
	if err != nil {
		return nudge.Runtime{}, err
	}
	if req.SessionID != "" && !prof.ValidSessionID(req.SessionID) {
		return nudge.Runtime{}, badRequest("invalid session id %q", req.SessionID)
	}
	host, err := l.conns.bindHost(req.Workspace, req.Host)
	if err != nil {
		return nudge.Runtime{}, err
	}
	p, err := l.findTarget(ctx, req.Workspace, host, tgt)
	if err != nil {
		return nudge.Runtime{}, err
	}
	if req.PID != 0 && p.PID != req.PID {
		return nudge.Runtime{}, nudge.NewError(nudge.RegistryDrift, fmt.Sprintf("target %s runs pid %d, not pid %d: check the pane (tmux display -p -t %s '#{pane_pid}') and register it again", tgt, p.PID, req.PID, p.ID))
	}
	rt := l.newRecord(req.Workspace, req.Role, req.Agent, req.AgentID)
	rt.SessionID, rt.Managed, rt.Argv, rt.Host = req.SessionID, !req.Unmanaged, prof.Launch, host
	if err := l.recs.reserve(rt.RuntimeID, "registering"); err != nil {
		return nudge.Runtime{}, err
	}
	defer l.recs.release(rt.RuntimeID)
	if err := l.recs.checkPaneFree(p.ID); err != nil {
		return nudge.Runtime{}, err
	}
	if rt.Managed {
		if _, err := l.tmux.run(ctx, rt.Host, "set-option", "-p", "-t", p.ID, "remain-on-exit", "on"); err != nil {
			return nudge.Runtime{}, fmt.Errorf("register %s: %w", rt.RuntimeID, err)
		}
	}
	setPane(&rt, p)
	return l.recorded(l.recs.record(rt, "runtime_registered", map[string]any{"target": req.Target, "pane_id": p.ID, "managed": rt.Managed}))
}

// findTarget resolves a target to a live pane in agents_<ws>.
func (l *launcher) findTarget(ctx context.Context, ws, host string, tgt Target) (paneInfo, error) {
	out, err := l.tmux.run(ctx, host, "list-panes", "-a", "-F", paneFormat)
	if err != nil && !isMissing(err) {
		return paneInfo{}, fmt.Errorf("register: %w", err)
	}
	for _, p := range parsePanes(splitLines(out)) {
		if p.ID != tgt.PaneID && (tgt.PaneID != "" || p.Session != tgt.Session || p.Window != tgt.Window || p.Index != tgt.Pane) {
			continue
		}
		switch {
		case p.Session != SessionName(ws):
			return paneInfo{}, badRequest("target %s is in session %s, not %s", tgt, p.Session, SessionName(ws))
		case p.Dead:
			return paneInfo{}, nudge.NewError(nudge.PaneDead, "target "+tgt.String()+" is a dead pane (its program ended: adopt a live pane, or start one with nudge spawn)")
		}
		return p, nil
	}
	return paneInfo{}, nudge.NewError(nudge.TargetNotFound, "no pane "+tgt.String()+" on this tmux server (`tmux list-panes -a` lists a server's panes; --host names another machine's)")
}
