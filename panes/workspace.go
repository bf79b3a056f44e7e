package panes

import (
	"context"
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

// workspace owns one workspace's control connection and its reconciler goroutine.
type workspace struct {
	name string
	host string        // ssh destination, "" local; guarded by mu (a workspace with no runtime may be rebound)
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

func (w *workspace) hostName() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.host
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
// Close: none). The records' lock is held: a new workspace takes the host of its
// runtimes, and bindHostLocked rebinds under the same lock.
func (r *conns) getLocked(name string) *workspace {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w := r.ws[name]; w != nil {
		return w
	}
	w := &workspace{name: name, host: r.cfg.SSHHost, kick: make(chan struct{}, 1), dial: make(chan struct{}, 1)}
	for _, rt := range r.recs.rts {
		if rt.WorkspaceID == name {
			w.host = rt.Host
			break
		}
	}
	r.ws[name] = w
	r.g.goAll(func() { r.connLoop(w) }, func() { r.loop(w) })
	return w
}

// lookup returns the workspace if it is known, starting nothing.
func (r *conns) lookup(name string) *workspace {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ws[name]
}

// wake asks a workspace to dial (if it has no connection) and reconcile at once.
func (r *conns) wake(ws string) {
	r.recs.mu.Lock()
	w := r.getLocked(ws)
	r.recs.mu.Unlock()
	poke(w.dial)
	poke(w.kick)
}

// connLoop keeps one control connection to agents_<ws> attached, redialling with
// backoff (100ms..5s) or at once when a spawn created the session. Every new or lost
// connection triggers a reconcile.
func (r *conns) connLoop(w *workspace) {
	backoff := 100 * time.Millisecond
	for r.g.ctx.Err() == nil {
		conn, err := controlmode.Dial(r.g.ctx, r.connConfig(w))
		if err != nil {
			r.cfg.Logger.Debug("dial", "workspace", w.name, "error", err)
			select {
			case <-r.g.ctx.Done():
			case <-w.dial:
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		r.stats.Dials.Add(1)
		w.setConn(conn)
		poke(w.kick)
		select {
		case <-r.g.ctx.Done():
		case <-conn.Done():
			r.cfg.Logger.Debug("control connection ended", "workspace", w.name, "error", conn.Err())
		}
		w.setConn(nil)
		conn.Close()
		poke(w.kick)
	}
}

func (r *conns) connConfig(w *workspace) controlmode.Config {
	host := w.hostName()
	return controlmode.Config{
		Tmux: r.cfg.Tmux, SocketName: r.cfg.SocketName, SocketPath: r.cfg.SocketPath,
		ConfigFile: r.cfg.ConfigFile, SSHHost: host, SSH: r.cfg.SSH, SSHConfig: r.cfg.SSHConfig,
		Session: SessionName(w.name), Logger: r.cfg.Logger.Named(w.name),
		OnOutput: func(pane int, data []byte, age time.Duration) { r.onOutput(paneKey{host, pane}, data, age) },
		OnEvent:  func(ev controlmode.Event) { r.onEvent(w, ev) },
	}
}

func (r *conns) onOutput(pane paneKey, data []byte, age time.Duration) {
	r.stats.LagNanos.Store(int64(age))
	r.recs.markers.feed(pane, data)
	if r.cfg.OnOutput == nil {
		return
	}
	if id, ok := r.recs.panes.Load(pane); ok {
		r.cfg.OnOutput(id.(string), data)
	}
}

// onEvent runs on the read goroutine: it only pokes the reconciler.
func (r *conns) onEvent(w *workspace, ev controlmode.Event) {
	if _, ok := ev.(*controlmode.Pause); ok {
		r.stats.Pauses.Add(1)
	}
	switch ev.(type) {
	case *controlmode.WindowClose, *controlmode.UnlinkedWindowClose, *controlmode.SubscriptionChanged,
		*controlmode.Exit, *controlmode.SessionsChanged:
		poke(w.kick)
	}
	if r.cfg.OnEvent != nil {
		r.cfg.OnEvent(w.name, ev)
	}
}

// listPanes lists the workspace session's panes: one command over the control
// connection, or a subprocess when none is up. A missing session is an empty list.
func (r *conns) listPanes(ctx context.Context, w *workspace) ([]paneInfo, error) {
	args := []string{"list-panes", "-s", "-t", "=" + SessionName(w.name), "-F", paneFormat}
	if c := w.current(); c != nil {
		q, err := controlmode.Quote(paneFormat)
		if err == nil {
			bctx, cancel := r.tmux.boundCtx(ctx)
			reply, err := c.Do(bctx, "list-panes -s -t "+"'="+SessionName(w.name)+"' -F "+q)
			cancel()
			if err == nil {
				panes := parsePanes(reply.Lines)
				bctx, cancel := r.tmux.boundCtx(ctx)
				deadSignals(bctx, c, panes)
				cancel()
				return panes, nil
			}
		}
	}
	out, err := r.tmux.run(ctx, w.hostName(), args...)
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
func (r *conns) conn(workspace string) (*controlmode.Conn, error) {
	w := r.lookup(workspace)
	if w != nil {
		if c := w.current(); c != nil {
			return c, nil
		}
		if h := w.hostName(); h != "" {
			return nil, nudge.NewError(nudge.HostUnreachable, "no control connection for workspace "+workspace+" on host "+h)
		}
	}
	return nil, nudge.NewError(nudge.TargetNotFound, "no control connection for workspace "+workspace)
}
