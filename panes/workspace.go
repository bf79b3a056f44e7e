package panes

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// conns owns the workspaces: one control connection (controlmode.Conn) each, kept by
// connLoop, and the commands run over it (list-panes, a reap, capture-pane for Tail and
// the last screen of a stopped pane, the session environment, pane options). A
// workspace's two goroutines (connLoop and the reconciler's loop) start when it is first
// used and stop on Close, through the group. mu guards the map; the records' lock, when
// both are held, is taken first.
type conns struct {
	cfg   *Config
	stats *Stats
	g     *group
	recs  *records
	tmux  *tmuxClient
	loop  func(w *workspace) // the reconciler's loop, one per workspace

	screens screenKeeper // the last screen of panes a stop closed, for Tail

	mu sync.Mutex
	ws map[string]*workspace
}

// workspace is one workspace: its place (place.go), its control connection, and the
// channels its two goroutines (conns.connLoop, reconciler.loop) wait on.
type workspace struct {
	name string
	at   place         // host, tmux server and session; guarded by mu (a workspace with no runtime may be rebound)
	kick chan struct{} // reconcile now (buffered 1; a full channel already means "soon")
	dial chan struct{} // dial now: a spawn has just created the session

	lastReap atomic.Int64 // unix nanos of the last reap request (reap.go)

	mu   sync.Mutex
	conn *controlmode.Conn
}

func (w *workspace) current() *controlmode.Conn {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.conn
}

func (w *workspace) hostName() string { return w.place().host }

func (w *workspace) place() place {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at
}

func (w *workspace) setConn(c *controlmode.Conn) {
	w.mu.Lock()
	w.conn = c
	w.mu.Unlock()
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// getLocked returns the workspace, starting its two goroutines the first time (after
// Close: none). The records' lock is held: a new workspace takes the place of its
// runtimes, and bindLocked rebinds under the same lock.
func (cs *conns) getLocked(name string) *workspace {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if w := cs.ws[name]; w != nil {
		return w
	}
	w := &workspace{name: name, at: cs.recordedPlaceLocked(name), kick: make(chan struct{}, 1), dial: make(chan struct{}, 1)}
	cs.ws[name] = w
	cs.g.goAll(func() { cs.connLoop(w) }, func() { cs.loop(w) })
	return w
}

// lookup returns the workspace if it is known, starting nothing.
func (cs *conns) lookup(name string) *workspace {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.ws[name]
}

// wake asks a workspace to dial (if it has no connection) and reconcile at once.
func (cs *conns) wake(ws string) {
	cs.recs.mu.Lock()
	w := cs.getLocked(ws)
	cs.recs.mu.Unlock()
	poke(w.dial)
	poke(w.kick)
}

// connLoop keeps one control connection to agents_<ws> attached, redialling with
// backoff (100ms..5s) or at once when a spawn created the session. Every new or lost
// connection triggers a reconcile.
func (cs *conns) connLoop(w *workspace) {
	backoff := 100 * time.Millisecond
	for cs.g.ctx.Err() == nil {
		conn, err := cs.dial(w)
		if err != nil {
			cs.cfg.Logger.Debug("dial", "workspace", w.name, "error", err)
			select {
			case <-cs.g.ctx.Done():
			case <-w.dial:
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		cs.stats.Dials.Add(1)
		w.setConn(conn)
		poke(w.kick)
		select {
		case <-cs.g.ctx.Done():
		case <-conn.Done():
			cs.cfg.Logger.Debug("control connection ended", "workspace", w.name, "error", conn.Err())
		}
		w.setConn(nil)
		conn.Close()
		poke(w.kick)
	}
}

// dial attaches the workspace's control connection. In a user's own session (place.go) it
// first checks that the session exists: attach-session starts a tmux server that is not
// running, and the user's, started so, would run the user's configuration (which may make
// sessions) for nudge's sake. The check cannot close the window between it and the attach
// (a server that is ending answers has-session, then is gone), so the attach names no
// configuration (connConfig): a server it starts has no session, the attach fails and the
// server exits at once, empty.
func (cs *conns) dial(w *workspace) (*controlmode.Conn, error) {
	if at := w.place(); !at.owned(w.name) {
		if _, err := cs.tmux.run(cs.g.ctx, at.server, "has-session", "-t", "="+at.session); err != nil {
			return nil, err
		}
	}
	return controlmode.Dial(cs.g.ctx, cs.connConfig(w))
}

func (cs *conns) connConfig(w *workspace) controlmode.Config {
	at := w.place()
	name, path := socketFlags(cs.cfg, at.socket)
	cfgFile := cs.cfg.ConfigFile
	if at.socket != "" {
		// A user's own server keeps its own configuration (-f is read only by a command
		// that starts the server); one ended between dial's check and the attach is not
		// started again with it.
		cfgFile = "/dev/null"
	}
	return controlmode.Config{
		Tmux: cs.cfg.Tmux, SocketName: name, SocketPath: path,
		ConfigFile: cfgFile, SSHHost: at.host, SSH: cs.cfg.SSH, SSHConfig: cs.cfg.SSHConfig,
		Session: at.session, Logger: cs.cfg.Logger.Named(w.name),
		OnOutput: func(pane int, data []byte, age time.Duration) { cs.onOutput(paneKey{at.server, pane}, data, age) },
		OnEvent:  func(ev controlmode.Event) { cs.onEvent(w, ev) },
	}
}

func (cs *conns) onOutput(pane paneKey, data []byte, age time.Duration) {
	cs.stats.LagNanos.Store(int64(age))
	cs.recs.markers.feed(pane, data)
	if cs.cfg.Bus == nil {
		return
	}
	if id, ok := cs.recs.panes.Load(pane); ok {
		cs.cfg.Bus.Output(id.(string), data)
	}
}

// onEvent runs on the read goroutine: it only pokes the reconciler.
func (cs *conns) onEvent(w *workspace, ev controlmode.Event) {
	if _, ok := ev.(*controlmode.Pause); ok {
		cs.stats.Pauses.Add(1)
	}
	switch ev.(type) {
	case *controlmode.WindowClose, *controlmode.UnlinkedWindowClose, *controlmode.SubscriptionChanged,
		*controlmode.Exit, *controlmode.SessionsChanged:
		poke(w.kick)
	}
	if pe, ok := paneEvent(w.name, ev); ok {
		nudge.Publish(cs.cfg.Bus, pe)
	}
}

// paneEvent is what a control-mode event tells the readiness monitor, if anything.
func paneEvent(ws string, ev controlmode.Event) (nudge.PaneEvent, bool) {
	switch e := ev.(type) {
	case *controlmode.PaneModeChanged:
		return nudge.PaneEvent{Workspace: ws, Pane: e.Pane, Kind: nudge.PaneModeChanged}, true
	case *controlmode.Pause:
		return nudge.PaneEvent{Workspace: ws, Pane: e.Pane, Kind: nudge.PaneOutputPaused}, true
	case *controlmode.WindowAdd, *controlmode.WindowClose, *controlmode.SessionsChanged,
		*controlmode.LayoutChange, *controlmode.SessionChanged:
		return nudge.PaneEvent{Workspace: ws, Pane: -1, Kind: nudge.PaneLayoutChanged}, true
	}
	return nudge.PaneEvent{}, false
}

// listPanes lists the workspace session's panes: one command over the control
// connection, or a subprocess when none is up. A missing session is an empty list, and
// so is a server that was ending (its last pane just closed) when it was asked.
func (cs *conns) listPanes(ctx context.Context, w *workspace) ([]paneInfo, error) {
	at := w.place()
	args := []string{"list-panes", "-s", "-t", "=" + at.session, "-F", paneFormat}
	if c := w.current(); c != nil {
		line, ok := quoteLine(args)
		if ok {
			bctx, cancel := cs.tmux.boundCtx(ctx)
			reply, err := c.Do(bctx, line)
			cancel()
			if err == nil {
				panes := parsePanes(reply.Lines)
				bctx, cancel := cs.tmux.boundCtx(ctx)
				deadSignals(bctx, c, panes)
				cancel()
				return panes, nil
			}
		}
	}
	out, err := cs.tmux.pastEnd(ctx, at.server, args...)
	if err != nil {
		if isMissing(err) {
			return nil, nil
		}
		return nil, err
	}
	return parsePanes(splitLines(out)), nil
}

// conn returns the live control connection of a workspace, or a TARGET_NOT_FOUND error.
// The connection is owned by the registry; callers must not Close it.
func (cs *conns) conn(workspace string) (*controlmode.Conn, error) {
	w := cs.lookup(workspace)
	if w != nil {
		if c := w.current(); c != nil {
			return c, nil
		}
		if h := w.hostName(); h != "" {
			return nil, nudge.NewError(nudge.HostUnreachable, "no control connection for workspace "+workspace+" on host "+h)
		}
		if at := w.place(); !at.owned(workspace) {
			return nil, nudge.NewError(nudge.TargetNotFound, "no control connection for workspace "+workspace+" to the user's "+at.String()+
				" (is that session running? `tmux "+strings.Join(socketArgs(cs.cfg, at.socket), " ")+" ls`)")
		}
	}
	return nil, nudge.NewError(nudge.TargetNotFound, "no control connection for workspace "+workspace)
}

func (cs *conns) workspace(name string) *workspace {
	cs.recs.mu.Lock()
	defer cs.recs.mu.Unlock()
	return cs.getLocked(name)
}

// command runs one tmux command over the control connection, or as a subprocess.
func (cs *conns) command(ctx context.Context, w *workspace, args ...string) error {
	if c := w.current(); c != nil {
		line, ok := quoteLine(args)
		if ok {
			bctx, cancel := cs.tmux.boundCtx(ctx)
			_, err := c.Do(bctx, line)
			cancel()
			if err == nil {
				return nil
			}
		}
	}
	_, err := cs.tmux.run(ctx, w.place().server, args...)
	return err
}

// hostOf returns the host a workspace is bound to ("" for this machine): that of its
// runtimes, else the daemon's default host.
func (cs *conns) hostOf(workspace string) string { return cs.placeOf(workspace).host }

// placeOf returns the place a workspace is bound to: that of its runtimes, else the
// default one (the daemon's default host, nudge's own server, agents_<ws>).
func (cs *conns) placeOf(workspace string) place {
	cs.recs.mu.Lock()
	defer cs.recs.mu.Unlock()
	return cs.placeLocked(workspace)
}

// placeLocked is placeOf with the records' lock held.
func (cs *conns) placeLocked(workspace string) place {
	if w := cs.lookup(workspace); w != nil {
		return w.place()
	}
	return cs.recordedPlaceLocked(workspace)
}

// recordedPlaceLocked is the place the records bind a workspace to: that of a runtime
// not deregistered, else the default place on the host of any runtime it had. The
// records' lock is held.
func (cs *conns) recordedPlaceLocked(workspace string) place {
	at := place{server{cs.cfg.SSHHost, ""}, SessionName(workspace)}
	for _, rt := range cs.recs.rts {
		if rt.WorkspaceID != workspace {
			continue
		}
		if rt.Status != nudge.StatusDeregistered {
			return placeOf(rt)
		}
		at.host = rt.Host
	}
	return at
}

// hostLocked is hostOf with the records' lock held.
func (cs *conns) hostLocked(workspace string) string { return cs.placeLocked(workspace).host }

// bindHost resolves and binds the place of a new runtime nudge starts in workspace: its
// own session agents_<ws> on its own server, on host want, or the workspace's current
// host if want is "". A workspace bound to a user's own session (placeOf) is refused.
func (cs *conns) bindHost(workspace, want string) (string, error) {
	if err := validHost(want); err != nil {
		return "", err
	}
	cs.recs.mu.Lock()
	defer cs.recs.mu.Unlock()
	cur := cs.placeLocked(workspace)
	at := place{server{cmp.Or(want, cur.host), ""}, SessionName(workspace)}
	if !cur.owned(workspace) && cs.boundLocked(workspace) != "" {
		return "", notOwned(workspace, cur, "starts programs")
	}
	return at.host, cs.bindLocked(workspace, at)
}

// boundLocked is a runtime (not deregistered) of workspace, "" if it has none. The
// records' lock is held.
func (cs *conns) boundLocked(workspace string) string {
	for _, rt := range cs.recs.rts {
		if rt.WorkspaceID == workspace && rt.Status != nudge.StatusDeregistered {
			return rt.RuntimeID
		}
	}
	return ""
}

// bind binds a workspace to at for a runtime a register adopts there (bindLocked).
func (cs *conns) bind(workspace string, at place) error {
	cs.recs.mu.Lock()
	defer cs.recs.mu.Unlock()
	return cs.bindLocked(workspace, at)
}

// bindLocked binds a workspace to a place for a new runtime. A workspace whose runtimes
// live in another place is a CONFLICT; one with none left is rebound. The records' lock
// is held.
func (cs *conns) bindLocked(workspace string, at place) error {
	for _, rt := range cs.recs.rts {
		if rt.WorkspaceID != workspace || rt.Status == nudge.StatusDeregistered {
			continue
		}
		if cur := placeOf(rt); cur != at {
			if cur.socket == at.socket && cur.session == at.session {
				return nudge.NewError(nudge.Conflict, fmt.Sprintf("workspace %s is bound to host %q (runtime %s)", workspace, displayHost(rt.Host), rt.RuntimeID))
			}
			return nudge.NewError(nudge.Conflict, fmt.Sprintf("workspace %s is bound to %s (runtime %s), not %s: a workspace's runtimes share one tmux session; "+
				"use another workspace (--workspace NAME) for this one, or deregister %s first", workspace, cur, rt.RuntimeID, at, rt.RuntimeID))
		}
	}
	if w := cs.lookup(workspace); w != nil {
		w.mu.Lock()
		changed := w.at != at
		w.at = at
		c := w.conn
		w.mu.Unlock()
		if changed && c != nil {
			c.Close() // the old place's connection; connLoop dials the new one
		}
	}
	return nil
}

// paneExitWait is Registry.PaneExit.
func (cs *conns) paneExitWait(ctx context.Context, workspace, paneID string) (bool, *int, error) {
	for try := 1; ; try++ {
		alive, dead, status, err := cs.paneExit(ctx, workspace, paneID)
		if err != nil || alive || !dead || status != nil || try*int(statusRecheck) >= int(time.Second) {
			return alive, status, err
		}
		cs.reap(ctx, cs.workspace(workspace))
		select {
		case <-ctx.Done():
			return false, nil, nil
		case <-time.After(statusRecheck):
		}
	}
}

// paneExit reads the pane once: alive, or dead with its status if tmux knows it.
func (cs *conns) paneExit(ctx context.Context, workspace, paneID string) (alive, dead bool, status *int, err error) {
	// display-message expands its formats empty for a missing target instead of failing.
	out, err := cs.tmux.run(ctx, cs.placeOf(workspace).server, "display-message", "-p", "-t", paneID, "#{pane_id} #{pane_dead} #{pane_dead_status} #{pane_dead_signal}")
	if isMissing(err) {
		return false, false, nil, nil
	}
	if err != nil {
		return false, false, nil, err
	}
	f := strings.Fields(out)
	if len(f) == 0 || f[0] != paneID {
		return false, false, nil, nil
	}
	f = f[1:]
	if len(f) == 0 || f[0] != "1" {
		return true, false, nil, nil
	}
	var st, signal string
	if len(f) > 1 {
		st = f[1]
	}
	if len(f) > 2 {
		signal = f[2]
	}
	if _, err := strconv.Atoi(st); err != nil && signal == "" {
		return false, true, nil, nil
	}
	return false, true, exitStatus(st, signal), nil
}
