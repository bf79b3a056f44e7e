package panes

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/nudgehq/nudge"
)

// Windows the daemon discovers and cleans (seed 002: the daemon owns a PTY's lifecycle,
// creating its record when it first sees the window and dropping it when the window is
// gone):
//
//   - a pane in a workspace's session that no runtime claims (a window opened there by
//     hand) is listed as a Stray (Registry.Unmanaged) until it is registered or closed;
//   - a managed runtime's window that a human closes is recreated once, but closed again
//     within Config.ClosedGrace of that it is dropped (deregistered), not recreated
//     again and again (a window gone with its whole session or tmux server is a fault,
//     not a human's close: it is recreated, and the crash loop bounds that);
//   - a runtime offline, failed or exited for Config.Retention (and not being restarted)
//     is collected: deregistered, so the fleet is what runs, not its history. Its record
//     stays in the store (`nudge ls --all`).

// Stray is a pane in a workspace's session that no runtime claims: a window opened there
// by hand, shown as unmanaged until `nudge register --target PANE_ID` adopts it. Its
// names are what tmux reports, with control bytes replaced and cut to 64 bytes.
type Stray struct {
	WorkspaceID string    `json:"workspace_id"`
	Host        string    `json:"host,omitempty"`
	TmuxSession string    `json:"tmux_session"`
	TmuxWindow  string    `json:"tmux_window"`
	WindowIndex int       `json:"window_index"`
	TmuxPane    int       `json:"tmux_pane"`
	PaneID      string    `json:"pane_id"`
	Target      string    `json:"target"` // session:window_index.pane
	Command     string    `json:"command"`
	PID         int       `json:"pid,omitempty"`
	SeenAt      time.Time `json:"seen_at"` // first seen
}

// strayName is a tmux name as a Stray shows it: control bytes as '?', at most 64 bytes.
func strayName(s string) string {
	b := []byte(s[:min(len(s), 64)])
	for i, c := range b {
		if c < 0x20 || c == 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}

// noteStrays records the panes of w that no runtime claims (claimed: pane ids), keeping
// when each was first seen.
func (rc *reconciler) noteStrays(w *workspace, panes []paneInfo, claimed map[string]bool, now time.Time) {
	at := w.place()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	old := rc.strays[w.name]
	var out []Stray
	for _, p := range panes {
		if claimed[p.ID] || p.Dead || p.Session != at.session { // a dead pane is nothing to register
			continue
		}
		s := Stray{WorkspaceID: w.name, Host: at.host, TmuxSession: strayName(p.Session), TmuxWindow: strayName(p.Window),
			WindowIndex: p.WindowIndex, TmuxPane: p.Index, PaneID: p.ID, Command: strayName(p.Command), PID: p.PID, SeenAt: now}
		s.Target = s.TmuxSession + ":" + strconv.Itoa(p.WindowIndex) + "." + strconv.Itoa(p.Index)
		if i := slices.IndexFunc(old, func(o Stray) bool { return o.PaneID == p.ID }); i >= 0 {
			s.SeenAt = old[i].SeenAt
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		delete(rc.strays, w.name)
		return
	}
	rc.strays[w.name] = out
}

// unmanaged lists every workspace's strays, by workspace and pane.
func (rc *reconciler) unmanaged() []Stray {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []Stray
	for _, ss := range rc.strays {
		out = append(out, ss...)
	}
	slices.SortFunc(out, func(a, b Stray) int {
		if a.WorkspaceID != b.WorkspaceID {
			if a.WorkspaceID < b.WorkspaceID {
				return -1
			}
			return 1
		}
		return a.WindowIndex*1000 + a.TmuxPane - b.WindowIndex*1000 - b.TmuxPane
	})
	return out
}

// closedAgainLocked reports whether rt, a managed runtime whose pane is missing from a
// session that still exists (a window closed, not a session or a tmux server lost), had
// its window closed before, within ClosedGrace: a human who closes the window the daemon
// recreated wants it gone. The first time it only notes the time. The records' lock is
// held.
func (rc *reconciler) closedAgainLocked(rt *nudge.Runtime, now time.Time) bool {
	if !rt.Managed || rc.cfg.ClosedGrace < 0 || rc.recs.held[rt.RuntimeID] > 0 {
		return false
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	last, ok := rc.closed[rt.RuntimeID]
	rc.closed[rt.RuntimeID] = now
	return ok && now.Sub(last) < rc.cfg.ClosedGrace
}

// collectableLocked reports whether rt has been offline, failed or exited for the
// retention, and is not being restarted or otherwise worked on. The records' lock is held.
func (rc *reconciler) collectableLocked(rt *nudge.Runtime, now time.Time) bool {
	switch rt.Status {
	case nudge.StatusOffline, nudge.StatusFailed, nudge.StatusExited:
	default:
		return false
	}
	return rc.cfg.Retention > 0 && rc.recs.busy[rt.RuntimeID] == "" && rc.recs.held[rt.RuntimeID] == 0 &&
		!rt.StatusSince.IsZero() && now.Sub(rt.StatusSince) >= rc.cfg.Retention
}

// dropped is why the reconciler lets a runtime go, and the dead pane that goes with it.
type dropped struct {
	why      string
	deadPane string // a dead pane (remain-on-exit) of nudge's own session to kill; "" none
}

// drop deregisters a runtime the reconciler let go (a window closed again, a retention
// over), saying why in its audit record, and kills the dead pane it leaves in nudge's own
// session.
func (rc *reconciler) drop(ctx context.Context, w *workspace, id string, d dropped) {
	if err := rc.recs.deregister(ctx, id, d.why, rc.conns.screens.drop); err != nil {
		rc.cfg.Logger.Warn("drop runtime", "runtime", id, "reason", d.why, "error", err)
		return
	}
	rc.mu.Lock()
	delete(rc.closed, id)
	rc.mu.Unlock()
	rc.cfg.Logger.Info("runtime dropped", "runtime", id, "reason", d.why)
	if d.deadPane != "" {
		if err := rc.conns.command(ctx, w, "kill-pane", "-t", d.deadPane); err != nil {
			rc.cfg.Logger.Debug("kill a dropped runtime's dead pane", "runtime", id, "pane", d.deadPane, "error", err)
		}
	}
}
