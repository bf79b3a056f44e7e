package panes

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nudgehq/nudge/controlmode"
)

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

// workspaceLocked returns the workspace, starting its goroutines the first time. r.mu
// is held. After Close it returns a workspace with no goroutines.
func (r *Registry) workspaceLocked(name string) *workspace {
	if w := r.ws[name]; w != nil {
		return w
	}
	w := &workspace{name: name, host: r.cfg.SSHHost, kick: make(chan struct{}, 1), dial: make(chan struct{}, 1)}
	for _, rt := range r.rts {
		if rt.WorkspaceID == name {
			w.host = rt.Host
			break
		}
	}
	r.ws[name] = w
	if r.closed {
		return w
	}
	r.wg.Add(2)
	go func() { defer r.wg.Done(); r.connLoop(w) }()
	go func() { defer r.wg.Done(); r.reconcileLoop(w) }()
	return w
}

// wake asks a workspace to dial (if it has no connection) and reconcile at once.
func (r *Registry) wake(ws string) {
	r.mu.Lock()
	w := r.workspaceLocked(ws)
	r.mu.Unlock()
	poke(w.dial)
	poke(w.kick)
}

// connLoop keeps one control connection to agents_<ws> attached, redialling with
// backoff (100ms..5s) or at once when a spawn created the session. Every new or lost
// connection triggers a reconcile.
func (r *Registry) connLoop(w *workspace) {
	backoff := 100 * time.Millisecond
	for r.ctx.Err() == nil {
		conn, err := controlmode.Dial(r.ctx, r.connConfig(w))
		if err != nil {
			r.cfg.Logger.Debug("dial", "workspace", w.name, "error", err)
			select {
			case <-r.ctx.Done():
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
		case <-r.ctx.Done():
		case <-conn.Done():
			r.cfg.Logger.Debug("control connection ended", "workspace", w.name, "error", conn.Err())
		}
		w.setConn(nil)
		conn.Close()
		poke(w.kick)
	}
}

func (r *Registry) connConfig(w *workspace) controlmode.Config {
	host := w.hostName()
	return controlmode.Config{
		Tmux: r.cfg.Tmux, SocketName: r.cfg.SocketName, SocketPath: r.cfg.SocketPath,
		ConfigFile: r.cfg.ConfigFile, SSHHost: host, SSH: r.cfg.SSH, SSHConfig: r.cfg.SSHConfig,
		Session: SessionName(w.name), Logger: r.cfg.Logger.Named(w.name),
		OnOutput: func(pane int, data []byte, age time.Duration) { r.onOutput(paneKey{host, pane}, data, age) },
		OnEvent:  func(ev controlmode.Event) { r.onEvent(w, ev) },
	}
}

func (r *Registry) onOutput(pane paneKey, data []byte, age time.Duration) {
	r.stats.LagNanos.Store(int64(age))
	r.markers.feed(pane, data)
	if r.cfg.OnOutput == nil {
		return
	}
	if id, ok := r.panes.Load(pane); ok {
		r.cfg.OnOutput(id.(string), data)
	}
}

// onEvent runs on the read goroutine: it only pokes the reconciler.
func (r *Registry) onEvent(w *workspace, ev controlmode.Event) {
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

// subscription reports every pane's liveness: with remain-on-exit a pane's death raises
// no other notification.
const (
	subName   = "nudge-panes"
	subFormat = "#{pane_id} #{pane_dead} #{pane_dead_status} #{pane_dead_signal} #{pane_pid}"
)

// reconcileLoop reconciles on every kick and every SweepInterval.
func (r *Registry) reconcileLoop(w *workspace) {
	t := time.NewTicker(r.cfg.SweepInterval)
	defer t.Stop()
	var subscribed *controlmode.Conn
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-w.kick:
		case <-t.C:
		}
		if c := w.current(); c != nil && c != subscribed {
			if err := c.Subscribe(r.ctx, subName, "%*", subFormat); err != nil {
				r.cfg.Logger.Warn("subscribe", "workspace", w.name, "error", err)
			} else {
				subscribed = c
			}
		}
		r.reconcile(r.ctx, w)
	}
}

// listPanes lists the workspace session's panes: one command over the control
// connection, or a subprocess when none is up. A missing session is an empty list.
func (r *Registry) listPanes(ctx context.Context, w *workspace) ([]paneInfo, error) {
	args := []string{"list-panes", "-s", "-t", "=" + SessionName(w.name), "-F", paneFormat}
	if c := w.current(); c != nil {
		q, err := controlmode.Quote(paneFormat)
		if err == nil {
			bctx, cancel := r.boundCtx(ctx)
			reply, err := c.Do(bctx, "list-panes -s -t "+"'="+SessionName(w.name)+"' -F "+q)
			cancel()
			if err == nil {
				panes := parsePanes(reply.Lines)
				bctx, cancel := r.boundCtx(ctx)
				deadSignals(bctx, c, panes)
				cancel()
				return panes, nil
			}
		}
	}
	out, err := r.tmuxRun(ctx, w.hostName(), args...)
	if err != nil {
		if isMissing(err) {
			return nil, nil
		}
		return nil, err
	}
	return parsePanes(splitLines(out)), nil
}
