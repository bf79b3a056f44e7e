package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/observe"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
	"github.com/nudgehq/nudge/panes"
)

// openObserver builds the metrics, alerts and status line (package observe) from the
// parts of the daemon they read. Called once the pipeline is open; it reads the rooms'
// news on the bus from then on.
func openObserver(d *Daemon) (*observe.Observer, error) {
	cfg := observe.DefaultConfig()
	cfg.Live = observe.Live{
		Runtimes: d.reg.List, Stats: d.reg.Stats, Store: d.db, StoreWarnSize: d.cfg.Keep.WarnSize,
		QueueDepth: d.pipe.Depth, Started: d.started, EventSeq: d.hub.Last,
		EventWrites: func() (uint64, uint64) {
			st := d.hub.Stats()
			return uint64(st.Unwritten), st.Lost
		},
		Notifications: func() (uint64, uint64) {
			if d.notify == nil { // opened after the observer
				return 0, 0
			}
			return d.notify.Sent(), d.notify.Dropped()
		},
	}
	cfg.Logger = d.log
	cfg.ExpectsHeartbeat = func(rt nudge.Runtime) bool {
		return observe.WatchesHeartbeat(rt, d.profiles[rt.Agent].SendsHeartbeats)
	}
	cfg.Bus = d.bus // its alerts go on the event stream (openFeed)
	if d.cfg.StatusLine {
		cfg.Status = &observe.StatusConfig{Workspaces: func() []string { return workspaces(d.reg.List()) },
			Line: func(ws string) string { return statusLine(d, ws) },
			Conn: func(ws string) (observe.Doer, error) {
				c, err := d.reg.Conn(ws)
				if err != nil {
					return nil, err
				}
				return c, nil
			},
			Down: downStatusLine(d.cfg)}
	}
	return observe.New(cfg)
}

// downStatusLine is the command a session's status line runs once the daemon stopped:
// `nudge status --short` of its workspace, which reads the status files and marks the
// line stale. "" (the line is left marked stale) when this program is not nudge (a test
// binary: tmux must never run it).
func downStatusLine(cfg Config) func(ws string) string {
	exe, err := os.Executable()
	if err != nil || filepath.Base(exe) != "nudge" {
		return func(string) string { return "" }
	}
	return func(ws string) string {
		return statusLineCommand(exe, ws, cfg.StateDir, cfg.Socket)
	}
}

// statusLineCommand is the shell command line of `nudge status --short` for ws.
func statusLineCommand(exe, ws, stateDir, socket string) string {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	return q(exe) + " status --short --workspace " + q(ws) + " --state-dir " + q(stateDir) + " --socket " + q(socket) + " 2>/dev/null"
}

// workspaces lists the workspaces that have runtimes in nudge's own sessions: the status
// line is never written into a user's own session (a register with --tmux-server).
func workspaces(rts []nudge.Runtime) []string {
	var out []string
	for _, rt := range rts {
		if rt.TmuxSocket != "" || rt.TmuxSession != panes.SessionName(rt.WorkspaceID) {
			continue
		}
		if !slices.Contains(out, rt.WorkspaceID) {
			out = append(out, rt.WorkspaceID)
		}
	}
	return out
}

// statusLine is ws's line for its session's status bar.
func statusLine(d *Daemon, ws string) string { return d.StatusLine(ws) }

// StatusLine is the line the status bar of workspace ws's session shows now.
func (d *Daemon) StatusLine(ws string) string {
	var es []tui.StatusEntry
	for _, rt := range d.reg.List() {
		if rt.WorkspaceID == ws {
			es = append(es, tui.EntryOf(rt, d.pipe.Depth(rt.RuntimeID)))
		}
	}
	return tui.ShortLine(es, false)
}
