package main

import (
	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/observe"
)

// openObserver builds the metrics, alerts and status line (package observe) from the
// parts of the daemon they read. Called once the pipeline is open; the daemon's hooks
// feed it only after d.ready is set.
func (d *daemon) openObserver() (*observe.Observer, error) {
	cfg := observe.DefaultConfig()
	cfg.Live = observe.Live{
		Runtimes: d.reg.List, Stats: d.reg.Stats, Store: d.db,
		QueueDepth: d.pipe.Depth, Started: d.started,
	}
	cfg.ExpectsHeartbeat, cfg.OnAlert, cfg.Logger = d.expectsHeartbeat, d.publishAlert, d.log
	if d.cfg.StatusLine {
		cfg.Status = &observe.StatusConfig{Workspaces: d.workspaces, Line: d.shortStatus, Conn: d.statusConn}
	}
	return observe.New(cfg)
}

// expectsHeartbeat says whether rt's profile sends heartbeats.
func (d *daemon) expectsHeartbeat(rt nudge.Runtime) bool {
	for _, s := range d.profiles[rt.Agent].AckSignals {
		if s == "heartbeat" {
			return true
		}
	}
	return false
}

// publishAlert puts an alert on the event stream, in its runtime's workspace.
func (d *daemon) publishAlert(a observe.Alert) {
	ws := ""
	if a.RuntimeID != "" {
		ws = d.eventWorkspace(a.RuntimeID)
	}
	d.hub.Publish(Event{Type: "alert", Workspace: ws, Detail: mustJSON(a)})
}

// workspaces lists the workspaces that have runtimes.
func (d *daemon) workspaces() []string {
	seen := map[string]bool{}
	var out []string
	for _, rt := range d.reg.List() {
		if !seen[rt.WorkspaceID] {
			seen[rt.WorkspaceID] = true
			out = append(out, rt.WorkspaceID)
		}
	}
	return out
}

// shortStatus is ws's line for its session's status bar.
func (d *daemon) shortStatus(ws string) string {
	var rts []runtimeView
	for _, rt := range d.reg.List() {
		if rt.WorkspaceID == ws {
			rts = append(rts, runtimeView{Runtime: rt, QueueDepth: d.pipe.Depth(rt.RuntimeID)})
		}
	}
	return shortStatus(rts, false)
}

func (d *daemon) statusConn(ws string) (observe.Doer, error) {
	c, err := d.reg.Conn(ws)
	if err != nil {
		return nil, err
	}
	return c, nil
}
