package panes

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// RegisterRequest adopts an existing pane.
type RegisterRequest struct {
	Workspace, Role string
	Agent           string // profile name; "" means "codex"
	AgentID         string // "" means Role
	Target          string // "SESSION:WINDOW.PANE" (window by name or index), "SESSION" (its active pane) or "%N"
	SessionID       string
	Unmanaged       bool   // tracked but never restarted, and refused for injection (UNMANAGED_RUNTIME)
	Host            string // ssh destination of the workspace's tmux; "" means the workspace's host (local for a new one)
	// TmuxSocket is the tmux server of the pane: a socket name (tmux -L; "default" is the
	// server a plain `tmux` uses) or an absolute socket path (tmux -S). "" means the
	// workspace's server (nudge's own for a new one). See place.go.
	TmuxSocket string
	PID        int // when not 0, the pane's process must be this one (the caller's view of it)
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
	srv, err := l.registerServer(req)
	if err != nil {
		return nudge.Runtime{}, err
	}
	if srv, err = l.identify(ctx, srv); err != nil {
		return nudge.Runtime{}, err
	}
	p, err := l.findTarget(ctx, req.Workspace, srv, tgt)
	if err != nil {
		return nudge.Runtime{}, err
	}
	if req.PID != 0 && p.PID != req.PID {
		return nudge.Runtime{}, nudge.NewError(nudge.RegistryDrift, fmt.Sprintf("target %s runs pid %d, not pid %d: check the pane (tmux display -p -t %s '#{pane_pid}') and register it again", tgt, p.PID, req.PID, p.ID))
	}
	if !req.Unmanaged {
		// Before the workspace is bound there: a refusal leaves it where it was.
		if err := l.deadPaneSafe(ctx, srv); err != nil {
			return nudge.Runtime{}, err
		}
	}
	if err := l.conns.bind(req.Workspace, place{srv, p.Session}); err != nil {
		return nudge.Runtime{}, err
	}
	rt := l.newRecord(req.Workspace, req.Role, req.Agent, req.AgentID)
	rt.SessionID, rt.Managed, rt.Argv = req.SessionID, !req.Unmanaged, prof.Launch
	rt.Host, rt.TmuxSocket, rt.TmuxSession = srv.host, srv.socket, p.Session
	if err := l.recs.reserve(rt.RuntimeID, "registering"); err != nil {
		return nudge.Runtime{}, err
	}
	defer l.recs.release(rt.RuntimeID)
	if err := l.recs.checkPaneFree(srv, p.ID); err != nil {
		return nudge.Runtime{}, err
	}
	if err := l.checkPaneFreeByPID(ctx, srv, p.ID); err != nil {
		return nudge.Runtime{}, err
	}
	if rt.Managed {
		if _, err := l.tmux.run(ctx, srv, "set-option", "-p", "-t", p.ID, "remain-on-exit", "on"); err != nil {
			return nudge.Runtime{}, fmt.Errorf("register %s: %w", rt.RuntimeID, err)
		}
	}
	setPane(&rt, p)
	// Bound again with the record, under the same lock: a register or spawn into the same
	// workspace that bound it elsewhere meanwhile is refused here.
	bound := func() error {
		if err := l.conns.bindLocked(req.Workspace, place{srv, p.Session}); err != nil {
			return err
		}
		return l.recs.checkPaneFreeLocked(srv, p.ID)
	}
	return l.recorded(l.recs.recordIf(rt, "runtime_registered", map[string]any{"target": req.Target, "pane_id": p.ID, "managed": rt.Managed,
		"tmux_socket": rt.TmuxSocket, "tmux_session": rt.TmuxSession}, bound))
}

// deadPaneSafe refuses a managed register on a tmux server of the user's own (not nudge's)
// whose version can crash when a remain-on-exit pane's program ends (controlmode.Caps
// DeadPaneSafe): it would put every session of the user's server at stake.
func (l *launcher) deadPaneSafe(ctx context.Context, srv server) error {
	if srv.socket == "" {
		return nil
	}
	out, err := l.tmux.run(ctx, srv, "display-message", "-p", "#{version}")
	if err != nil {
		return fmt.Errorf("register: the version of tmux server %s: %w", socketLabel(srv.socket), err)
	}
	if caps := controlmode.ParseVersion(out); !caps.DeadPaneSafe() {
		return badRequest("tmux %s on server %s: a managed runtime's pane is remain-on-exit, and tmux before 3.3 can crash, "+
			"with every session of that server, when such a pane's program ends while a control client is attached; "+
			"use tmux 3.3 or newer, run the agent on nudge's own server (nudge spawn), or register the pane --unmanaged "+
			"(watched, but no trigger is typed into it)",
			caps.Version, socketLabel(srv.socket))
	}
	return nil
}

// registerServer is the tmux server a register looks in: the one it names, else the
// workspace's (on the host it names, else the workspace's).
func (l *launcher) registerServer(req RegisterRequest) (server, error) {
	if err := validHost(req.Host); err != nil {
		return server{}, err
	}
	socket, err := normSocket(l.cfg, req.TmuxSocket)
	if err != nil {
		return server{}, err
	}
	cur := l.conns.placeOf(req.Workspace)
	srv := server{req.Host, socket}
	if req.Host == "" {
		srv.host = cur.host
	}
	if req.TmuxSocket == "" && srv.host == cur.host {
		srv.socket = cur.socket
	}
	return srv, nil
}

// identify decides which server srv is by identity, not by its spelling: a local one must
// be a socket of this uid (foreignSocket); one that is the same socket file as nudge's
// own server, or answers with the same server pid, is nudge's own (socket ""), where
// another workspace's session is refused (findTarget).
func (l *launcher) identify(ctx context.Context, srv server) (server, error) {
	if srv.socket == "" {
		return srv, nil
	}
	own := server{srv.host, ""}
	if srv.host == "" {
		if err := foreignSocket(l.cfg, srv.socket); err != nil {
			return server{}, err
		}
		if sameServer(l.cfg, srv, own) {
			return own, nil
		}
	}
	pid, err := l.serverPID(ctx, srv)
	if err != nil {
		return srv, nil // no server answers there: findTarget says so
	}
	if ownPID, err := l.serverPID(ctx, own); err == nil && ownPID == pid {
		return own, nil
	}
	return srv, nil
}

// checkPaneFreeByPID refuses pane paneID of srv when a live runtime holds the pane of
// that id on a server of another spelling on the same host that answers with the same
// server pid (on an ssh host no socket file can be compared: checkPaneFree).
func (l *launcher) checkPaneFreeByPID(ctx context.Context, srv server, paneID string) error {
	var pid int
	for _, rt := range l.recs.holders(paneID) {
		at := serverOf(&rt)
		if at.host != srv.host || at == srv {
			continue
		}
		if pid == 0 {
			var err error
			if pid, err = l.serverPID(ctx, srv); err != nil {
				return nil // no server answers there: nothing to take
			}
		}
		if other, err := l.serverPID(ctx, at); err == nil && other == pid {
			return nudge.NewError(nudge.Conflict, "pane "+paneID+" is already runtime "+rt.RuntimeID+" (on "+socketLabel(at.socket)+", the same tmux server)"+
				" (`nudge deregister "+rt.RuntimeID+"` first to adopt it under another name)")
		}
	}
	return nil
}

// serverPID is the pid of the tmux server srv, as it reports it.
func (l *launcher) serverPID(ctx context.Context, srv server) (int, error) {
	out, err := l.tmux.run(ctx, srv, "display-message", "-p", "#{pid}")
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("tmux server %s: pid %q", socketLabel(srv.socket), strings.TrimSpace(out))
	}
	return pid, nil
}

// targetFormat is what findTarget lists: paneFormat with the pane's and its window's
// active flags first.
const targetFormat = "#{window_active} #{pane_active} " + paneFormat

// findTarget resolves a target to a live pane on server srv: in any session but another
// workspace's own (agents_<other>), on whichever server (srv is nudge's own whatever its
// spelling: identify).
func (l *launcher) findTarget(ctx context.Context, ws string, srv server, tgt Target) (paneInfo, error) {
	out, err := l.tmux.run(ctx, srv, "list-panes", "-a", "-F", targetFormat)
	if err != nil && !isMissing(err) {
		return paneInfo{}, fmt.Errorf("register: %w", err)
	}
	lines := splitLines(out)
	p, ok := pickTarget(lines, tgt)
	if other := otherSession(lines, p.ID, ws); ok && other != "" {
		p.Session = other // its window is another workspace's too (a grouped session, a linked window)
	}
	switch {
	case !ok:
		where := "on this tmux server"
		if srv.socket != "" {
			where = "on tmux server " + socketLabel(srv.socket)
		}
		return paneInfo{}, nudge.NewError(nudge.TargetNotFound, "no pane "+tgt.String()+" "+where+
			" (`tmux list-panes -a` lists a server's panes; --tmux-socket names another server, --host another machine's)")
	case strings.HasPrefix(p.Session, SessionPrefix) && p.Session != SessionName(ws):
		return paneInfo{}, badRequest("target %s is in session %s, another workspace's, not %s", tgt, p.Session, SessionName(ws))
	case p.Dead:
		return paneInfo{}, nudge.NewError(nudge.PaneDead, "target "+tgt.String()+" is a dead pane (its program ended: adopt a live pane, or start one with nudge spawn)")
	}
	return p, nil
}

// otherSession is a session of another workspace (agents_<other>) that shows pane paneID
// among lines of targetFormat, or "": a pane is listed once for every session its window
// is in, and a window of B's session grouped with or linked into another session is B's.
func otherSession(lines []string, paneID, ws string) string {
	for _, l := range lines {
		_, rest, _ := strings.Cut(l, " ")
		_, rest, _ = strings.Cut(rest, " ")
		if ps := parsePanes([]string{rest}); len(ps) == 1 && ps[0].ID == paneID &&
			strings.HasPrefix(ps[0].Session, SessionPrefix) && ps[0].Session != SessionName(ws) {
			return ps[0].Session
		}
	}
	return ""
}

// pickTarget finds tgt among lines of targetFormat: by pane id; by session, window (its
// index, else its name) and pane index; or, for a session alone, its active window's
// active pane.
func pickTarget(lines []string, tgt Target) (paneInfo, bool) {
	idx, err := strconv.Atoi(tgt.Window)
	byIndex := err == nil && idx >= 0
	var byName paneInfo
	found := false
	for _, l := range lines {
		winActive, rest, _ := strings.Cut(l, " ")
		paneActive, rest, _ := strings.Cut(rest, " ")
		ps := parsePanes([]string{rest})
		if len(ps) == 0 {
			continue
		}
		p := ps[0]
		switch {
		case tgt.PaneID != "":
			if p.ID == tgt.PaneID {
				return p, true
			}
		case p.Session != tgt.Session:
		case tgt.Window == "":
			if winActive == "1" && paneActive == "1" {
				return p, true
			}
		case p.Index != tgt.Pane:
		case byIndex && p.WindowIndex == idx:
			return p, true
		case p.Window == tgt.Window && !found:
			byName, found = p, true
		}
	}
	return byName, found
}
