package detector

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/panes"
)

// bindCommand is what the root-table Any binding runs: send-keys with no arguments
// re-sends the key that was pressed unchanged (tmux 3.3+; controlmode.Caps.RepeatKey),
// then the channel is signalled. nudge's own send-keys never enters root bindings, so
// every signal is a human key. tmux 3.2 sends nothing for a bare send-keys: there each key
// is bound on its own (eachKeys, eachCommand) and the Any key stays unbound.
const bindCommand = "send-keys ; wait-for -S " + HumanChannel

// clientFormat is the list-clients format parsed by parseClients.
const clientFormat = "#{client_control_mode} #{client_activity} #{pane_id} #{client_name}"

// humanWatch owns the key-event control connection: it installs the Any binding and loops
// `wait-for nudge-human` (a blocking command, hence its own connection), asking
// list-clients after each wake which human client typed and so which pane.
type humanWatch struct {
	m      *Monitor
	host   string        // ssh destination of the tmux server watched; "" local
	socket string        // its socket (nudge.Runtime.TmuxSocket): "" nudge's own server
	hint   chan struct{} // cap 1: a session may exist now
	bindOK atomic.Bool   // the Any binding is installed and ours: every key is reported
	bound  atomic.Bool   // a binding of ours is installed (Any, or each key on tmux 3.2)

	mu        sync.Mutex
	installed bool     // we installed the binding and must remove it
	tried     bool     // the binding decision was made on this server
	server    string   // that server's pid: a new server (restarted) is decided again
	each      []string // the keys bound one by one (tmux 3.2), nil with the Any binding
}

func newHumanWatch(m *Monitor, host, socket string) *humanWatch {
	return &humanWatch{m: m, host: host, socket: socket, hint: make(chan struct{}, 1)}
}

// serverKey names the tmux server of a runtime's pane: its host and socket. Pane ids
// (%N) are unique within one server only; each server has its own key watch.
func serverKey(rt nudge.Runtime) string { return rt.Host + "\x00" + rt.TmuxSocket }

// key is the watch's serverKey.
func (h *humanWatch) key() string { return h.host + "\x00" + h.socket }

// socketFlags are the tmux -L name and -S path of the watched server.
func (h *humanWatch) socketFlags() (name, path string) {
	switch {
	case h.socket == "":
		return h.m.cfg.SocketName, h.m.cfg.SocketPath
	case filepath.IsAbs(h.socket):
		return "", h.socket
	}
	return h.socket, ""
}

// run dials the event connection on any workspace session, (re)dialling when it ends.
func (h *humanWatch) run() {
	defer h.m.wg.Done()
	ctx := h.m.ctx
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		sess := h.session()
		if sess == "" {
			select {
			case <-ctx.Done():
				return
			case <-h.hint:
			}
			continue
		}
		start := time.Now()
		if h.socket != "" {
			// A user's own server: attach-session would start it (running the user's
			// configuration) when it is not running.
			if _, err := h.tmux(ctx, "has-session", "-t", "="+sess); err != nil {
				h.m.cfg.Logger.Debug("key-event connection: no session", "session", sess, "error", err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
				backoff = min(backoff*2, 5*time.Second)
				continue
			}
		}
		name, path := h.socketFlags()
		conn, err := controlmode.Dial(ctx, controlmode.Config{
			Tmux: h.m.cfg.Tmux, SocketName: name, SocketPath: path,
			SSHHost: h.host, SSH: h.m.cfg.SSH, SSHConfig: h.m.cfg.SSHConfig,
			Session: sess, NoOutput: true, Logger: h.m.cfg.Logger.Named("keys"),
		})
		if err == nil {
			h.install(ctx, conn.Caps(), serverPID(ctx, conn))
			h.loop(ctx, conn)
			conn.Close()
		} else {
			h.m.cfg.Logger.Debug("key-event connection failed", "session", sess, "error", err)
		}
		if time.Since(start) > 5*time.Second {
			backoff = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// session picks a workspace session on the watch's server to attach the event
// connection to.
func (h *humanWatch) session() string {
	for _, rt := range h.m.cfg.Registry.List() {
		if rt.Host != h.host || rt.TmuxSocket != h.socket || rt.Status == nudge.StatusDeregistered {
			continue
		}
		if rt.TmuxSession != "" {
			return rt.TmuxSession
		}
		if rt.WorkspaceID != "" {
			return panes.SessionName(rt.WorkspaceID)
		}
	}
	return ""
}

// loop waits for the channel and resolves each wake to panes.
func (h *humanWatch) loop(ctx context.Context, conn *controlmode.Conn) {
	for {
		if _, err := conn.Do(ctx, "wait-for "+HumanChannel); err != nil {
			return
		}
		now := h.m.cfg.Now()
		rep, err := conn.Do(ctx, "list-clients -F '"+clientFormat+"'")
		if err != nil {
			return
		}
		for _, pane := range humanPanes(rep.Lines, now, "") {
			if ps := h.m.hostPane(h.key(), pane); ps != nil {
				ps.humanKey(now)
			}
		}
	}
}

// humanPanes returns the panes of the non-control clients with the newest activity, if
// that activity is within the last second (client_activity has 1 s resolution).
// onlyPane, if set ("%N"), restricts the answer to that pane.
func humanPanes(lines []string, now time.Time, onlyPane string) []int {
	var (
		best  int64 = -1
		found []int
	)
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 3 || f[0] != "0" {
			continue
		}
		act, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || act < now.Unix()-1 || (onlyPane != "" && f[2] != onlyPane) {
			continue
		}
		n, ok := paneNumber(f[2])
		if !ok {
			continue
		}
		switch {
		case act > best:
			best, found = act, append(found[:0], n)
		case act == best:
			found = append(found, n)
		}
	}
	return found
}

// tmux runs one tmux command against the watched server (outside any control
// connection: the event connection may be stalled in wait-for).
func (h *humanWatch) tmux(ctx context.Context, args ...string) (string, error) {
	bin := h.m.cfg.Tmux
	if bin == "" {
		bin = "tmux"
	}
	var argv []string
	switch name, path := h.socketFlags(); {
	case path != "":
		argv = append(argv, "-S", path)
	case name != "":
		argv = append(argv, "-L", name)
	}
	if len(args) > 0 && args[0] == "list-keys" {
		// list-keys starts a server that is not running (tmux's CMD_STARTSERVER): only
		// ask one that runs (at Close the server may be gone).
		if out, err := h.tmux(ctx, "display-message", "-p", "#{pid}"); err != nil {
			return out, err
		}
	}
	argv = append(append([]string{bin}, argv...), args...)
	if h.host != "" {
		argv = controlmode.SSHArgv(h.m.cfg.SSH, h.m.cfg.SSHConfig, h.host, argv)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = controlmode.ChildEnv(os.Environ())
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// serverPID is the tmux server's pid as conn's server reports it ("" if it cannot say).
func serverPID(ctx context.Context, conn *controlmode.Conn) string {
	rep, err := conn.Do(ctx, "display-message -p '#{pid}'")
	if err != nil || len(rep.Lines) == 0 {
		return ""
	}
	return rep.Lines[0]
}

// install binds Any in the root table unless the user bound it already. A binding that
// signals our channel is a leftover of an earlier nudge and is taken over. Where a bare
// send-keys does not repeat its key (tmux 3.2), it binds each key of eachKeys instead.
func (h *humanWatch) install(ctx context.Context, caps controlmode.Caps, server string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tried && server != h.server {
		// A new tmux server (the old one was killed and nudge started another): its key
		// table is fresh, the decision is made again.
		h.tried, h.installed, h.each = false, false, nil
		h.bound.Store(false)
		h.bindOK.Store(false)
	}
	h.server = server
	if h.tried {
		ok := h.installed && h.ours(ctx)
		h.bound.Store(ok)
		h.bindOK.Store(ok && h.each == nil)
		return
	}
	h.tried = true
	ctx, cancel := context.WithTimeout(ctx, h.m.cfg.CaptureTimeout)
	defer cancel()
	out, err := h.tmux(ctx, "list-keys", "-T", "root")
	if err != nil {
		h.m.cfg.Logger.Warn("cannot list the root key table; using the %output fallback for human input", "error", err)
		return
	}
	root := rootKeys(out)
	if mine, bound := root["Any"]; bound && !mine {
		h.m.cfg.Logger.Info("root key Any is bound by the user; using the %output fallback for human input")
		return
	}
	if !caps.RepeatKey() {
		h.installEach(ctx, caps, root)
		return
	}
	if _, err := h.tmux(ctx, "bind-key", "-n", "Any", bindCommand); err != nil {
		h.m.cfg.Logger.Warn("cannot bind Any; using the %output fallback for human input", "error", err)
		return
	}
	h.installed = true
	h.bound.Store(true)
	h.bindOK.Store(true)
}

// installEach binds every key of eachKeys the user has not bound in the root table, in one
// tmux command. Keys it does not cover reach the pane unbound and are seen through the
// %output fallback.
func (h *humanWatch) installEach(ctx context.Context, caps controlmode.Caps, root map[string]bool) {
	if root["Any"] { // a leftover of an earlier nudge on this server would swallow the keys not bound here
		if _, err := h.tmux(ctx, "unbind-key", "-n", "Any"); err != nil {
			h.m.cfg.Logger.Warn("cannot remove a leftover Any binding", "error", err)
		}
	}
	user := map[string]bool{}
	for k, mine := range root {
		if !mine {
			user[k] = true
		}
	}
	var (
		keys []string
		cmds [][]string
	)
	for _, k := range eachKeys() {
		if !user[k] {
			keys = append(keys, k)
			cmds = append(cmds, []string{"bind-key", "-n", argvKey(k), eachCommand(k)})
		}
	}
	if len(keys) == 0 {
		h.m.cfg.Logger.Info("every key nudge would bind is bound by the user; using the %output fallback for human input")
		return
	}
	h.installed, h.each = true, keys // a partial failure is undone by unbind
	if err := h.tmuxBatch(ctx, cmds); err != nil {
		h.m.cfg.Logger.Warn("cannot bind keys; using the %output fallback for human input", "error", err)
		h.unbindLocked()
		return
	}
	h.m.cfg.Logger.Info("tmux "+caps.Version+": a bare send-keys does not repeat its key; each key is bound on its own, "+
		"other keys (non-ASCII, pastes) are seen from the pane's output", "keys", len(keys), "user_bound", len(user))
	h.bound.Store(true)
}

// tmuxBatch runs cmds as few tmux invocations (a client's message to the server is
// bounded, about 16 KiB).
func (h *humanWatch) tmuxBatch(ctx context.Context, cmds [][]string) error {
	const perCall = 50
	for len(cmds) > 0 {
		n := min(perCall, len(cmds))
		var argv []string
		for i, c := range cmds[:n] {
			if i > 0 {
				argv = append(argv, ";")
			}
			argv = append(argv, c...)
		}
		if out, err := h.tmux(ctx, argv...); err != nil {
			return fmt.Errorf("%w: %s", err, strings.TrimSpace(out))
		}
		cmds = cmds[n:]
	}
	return nil
}

// ours reports whether the binding is still the one we installed.
func (h *humanWatch) ours(ctx context.Context) bool {
	if h.each != nil {
		out, err := h.tmux(ctx, "list-keys", "-T", "root")
		if err != nil {
			return false
		}
		keys := rootKeys(out)
		for _, k := range h.each {
			if keys[k] {
				return true
			}
		}
		return false
	}
	out, err := h.tmux(ctx, "list-keys", "-T", "root")
	return err == nil && rootKeys(out)["Any"]
}

// unbind removes the binding if we installed it and it is still ours.
func (h *humanWatch) unbind() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unbindLocked()
}

func (h *humanWatch) unbindLocked() {
	if !h.installed {
		return
	}
	h.installed = false
	h.bound.Store(false)
	h.bindOK.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), h.m.cfg.CaptureTimeout)
	defer cancel()
	if h.each != nil {
		each := h.each
		h.each = nil
		out, err := h.tmux(ctx, "list-keys", "-T", "root")
		if err != nil {
			return
		}
		keys := rootKeys(out)
		var cmds [][]string
		for _, k := range each {
			if keys[k] {
				cmds = append(cmds, []string{"unbind-key", "-n", argvKey(k)})
			}
		}
		if err := h.tmuxBatch(ctx, cmds); err != nil {
			h.m.cfg.Logger.Warn("cannot remove the key bindings", "error", err)
		}
		return
	}
	if h.ours(ctx) {
		if _, err := h.tmux(ctx, "unbind-key", "-n", "Any"); err != nil {
			h.m.cfg.Logger.Warn("cannot remove the Any binding", "error", err)
		}
	}
}

// wake releases a pending wait-for so the event connection can close promptly.
func (h *humanWatch) wake() {
	ctx, cancel := context.WithTimeout(context.Background(), h.m.cfg.CaptureTimeout)
	defer cancel()
	h.tmux(ctx, "wait-for", "-S", HumanChannel) //nolint:errcheck // best effort; no server is fine
}

// confirmHuman is the fallback without the binding: output nudge did not cause arrived on
// the pane; one list-clients query says whether a human client on that pane was active in
// the last second. At most one query per pane per second: a query due sooner returns
// how long to wait, and the caller runs it then.
func (l *paneLoop) confirmHuman() time.Duration {
	m, ps := l.m, l.ps
	now := m.cfg.Now()
	ps.mu.Lock()
	if since := now.Sub(ps.confirmAt); since < time.Second {
		ps.mu.Unlock()
		return time.Second - since
	}
	ps.confirmAt = now
	ps.mu.Unlock()
	rt, ok := m.cfg.Registry.Get(ps.id)
	if !ok || rt.PaneID == "" {
		return 0
	}
	conn, err := m.cfg.Registry.Conn(rt.WorkspaceID)
	if err != nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(ps.ctx, m.cfg.CaptureTimeout)
	defer cancel()
	rep, err := conn.Do(ctx, "list-clients -F '"+clientFormat+"'")
	if err != nil {
		return 0
	}
	if len(humanPanes(rep.Lines, now, rt.PaneID)) > 0 {
		ps.humanKey(now)
	}
	return 0
}
