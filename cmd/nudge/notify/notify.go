// Package notify tells people when an agent wants them (seed 002's notifications): when a
// runtime becomes READY, NEEDS_CONFIRMATION or ERROR (its screen says so, or its program
// failed), when its program finished its task (status exited: exit status 0 or its
// profile's done marker, seed 003), and when a trigger fails. Each such
// event is shown with tmux display-message to the clients attached to the workspace's
// session (through the daemon's control connection) and, if configured, given to a user
// command as JSON on its stdin.
//
// The main types:
//
//	Notifier  reads a Hub's events and notifies; New starts it, Close stops it
//	Config    the command, its timeout and concurrency; DefaultConfig
//	Conns     a workspace's control connection (satisfied by *panes.Registry)
//
// Nothing here blocks the daemon: the Notifier reads its own bounded subscription, and
// commands and displays run in small bounded pools; what does not fit is dropped and
// counted (Dropped), with a warning.
package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/controlmode"
)

// Config configures a Notifier. Zero fields take DefaultConfig's values.
type Config struct {
	// Command is a shell command line (run with /bin/sh -c) given each notification's
	// event JSON on stdin. "" runs nothing.
	Command string
	// Timeout bounds one run of Command; then its process group is killed. 0 means 10 s.
	Timeout time.Duration
	// MaxRunning is how many Commands may run at once; a notification that finds them all
	// busy is dropped (counted, logged). 0 means 4.
	MaxRunning int
	// Env is Command's environment. nil means CommandEnv of the daemon's environment and
	// KeepEnv: no NUDGE_*, no TMUX, no credential the agents' environment holds.
	Env []string
	// KeepEnv names credential-looking variables (CommandEnv) Command gets all the same.
	KeepEnv []string
	// Push, when set, is given each notification too (the web view's Web Push: its
	// workspace and text). It is called inside the hub's Publish and must not block.
	Push func(workspace, msg string)
	// NoDisplay turns the tmux display-message off.
	NoDisplay bool
	// Session is the tmux session of a workspace (panes.SessionName).
	Session func(workspace string) string
	// Logger; nil means a null logger.
	Logger hclog.Logger
}

// DefaultConfig returns the defaults: no command, 10 s, 4 at once, tmux messages on.
func DefaultConfig() Config {
	return Config{Timeout: 10 * time.Second, MaxRunning: 4}
}

// Source is the event hub (*events.Hub): it hands every event to the Notifier inside
// Publish, which costs no goroutine wake per event (a busy fleet publishes a hundred or
// more a second, and only the rare failed trigger or runtime, or a dialog, notifies).
type Source interface {
	Observe(fn func(events.Event)) (stop func())
}

// Conns gives a workspace's control connection (*panes.Registry). The connection is
// the caller's: the Notifier never closes it.
type Conns interface {
	Conn(workspace string) (*controlmode.Conn, error)
}

// Notifier reads events from a Source and notifies. The daemon owns it and calls Close,
// which waits for running commands too.
type Notifier struct {
	cfg   Config
	src   Source
	conns Conns
	log   hclog.Logger

	cmds     chan struct{} // command slots
	displays chan struct{} // display slots
	clients  clientCache   // the clients attached to each session, listed at most once a second
	dropped  atomic.Uint64
	sent     atomic.Uint64

	stop   func()          // ends the Source's calls
	ctx    context.Context // ended by Close: commands and displays in flight are cut short
	cancel context.CancelFunc
	wg     sync.WaitGroup // every command and display in flight
	once   sync.Once

	mu        sync.Mutex          // held while an event is read
	readiness map[string]string   // runtime id -> last readiness seen
	status    map[string]string   // runtime id -> last lifecycle status seen
	failed    map[string]struct{} // trigger ids already notified as failed
}

// maxDisplays bounds display-message rounds in flight.
const maxDisplays = 4

// New starts a Notifier on src. conns may be nil (no tmux messages).
func New(cfg Config, src Source, conns Conns) *Notifier {
	d := DefaultConfig()
	if cfg.Timeout <= 0 {
		cfg.Timeout = d.Timeout
	}
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = d.MaxRunning
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Session == nil {
		cfg.Session = func(ws string) string { return ws }
	}
	n := &Notifier{cfg: cfg, src: src, conns: conns, log: cfg.Logger,
		cmds: make(chan struct{}, cfg.MaxRunning), displays: make(chan struct{}, maxDisplays),
		readiness: map[string]string{}, status: map[string]string{}, failed: map[string]struct{}{}}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.stop = src.Observe(n.observe)
	return n
}

// Close stops reading, kills the commands still running (their process groups) and waits
// for them and the displays in flight. Idempotent.
func (n *Notifier) Close() {
	n.once.Do(func() {
		n.stop() // no event is read after this: nothing new is spawned
		n.cancel()
		n.wg.Wait()
	})
}

// Dropped is how many notifications were dropped because their pool was full.
func (n *Notifier) Dropped() uint64 { return n.dropped.Load() }

// Sent is how many notifications were handed to a command or a display.
func (n *Notifier) Sent() uint64 { return n.sent.Load() }

// observe takes one event from the hub (Hub.Observe: inside Publish, in order).
func (n *Notifier) observe(ev events.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.event(ev)
}

// view is what a notification needs of an event.
type view struct {
	Type      string `json:"type"`
	Workspace string `json:"workspace"`
	Detail    struct {
		RuntimeID string `json:"runtime_id"`
		Readiness string `json:"readiness"`
		Summary   string `json:"summary"`
	} `json:"detail"`
	Runtime *runtimeView `json:"runtime"`
	Trigger *triggerView `json:"trigger"`
}

type runtimeView struct {
	RuntimeID  string `json:"runtime_id"`
	Status     string `json:"status"`
	ExitStatus *int   `json:"exit_status"`
}

type triggerView struct {
	TriggerID string `json:"trigger_id"`
	Agent     string `json:"agent"`
	State     string `json:"state"`
	ErrorCode string `json:"error_code"`
}

// event notifies if ev is worth it.
func (n *Notifier) event(ev events.Event) {
	raw := ev.JSON()
	if raw == nil || ev.Host != "" { // another host's event: its own daemon notifies
		return
	}
	var v view
	if !typedView(ev, &v) && json.Unmarshal(raw, &v) != nil {
		return
	}
	if msg := n.message(&v); msg != "" {
		n.notify(v.Workspace, msg, raw)
	}
}

// typedView fills v from the records the daemon published (a trigger's or a runtime's
// receipt), without decoding the event's JSON, and reports whether it could. Every
// trigger and runtime change comes here (four or five per delivered trigger); decoding
// each event, the whole trigger record with its prompt, was ~6 % of the daemon's CPU in
// a 100-pane fan-out, to find the rare failed one.
func typedView(ev events.Event, v *view) bool {
	v.Type, v.Workspace = ev.Type, ev.Workspace
	switch ev.Type {
	case "trigger":
		t, ok := ev.Trigger.(nudge.Trigger)
		if !ok {
			return false
		}
		v.Trigger = &triggerView{TriggerID: t.TriggerID, Agent: t.Agent, State: string(t.State), ErrorCode: string(t.ErrorCode)}
		return true
	case "runtime":
		rt, ok := ev.Runtime.(nudge.Runtime)
		if !ok {
			return false
		}
		v.Runtime = &runtimeView{RuntimeID: rt.RuntimeID, Status: string(rt.Status), ExitStatus: rt.ExitStatus}
		return true
	case "readiness": // the daemon's own carry their record; else decode only the detail
		if d, ok := ev.Value.(events.Readiness); ok {
			v.Detail.RuntimeID, v.Detail.Readiness, v.Detail.Summary = d.RuntimeID, string(d.Readiness), d.Summary
			return true
		}
		return json.Unmarshal(ev.Detail, &v.Detail) == nil
	}
	return true // alerts, fallback steps, ...: never a notification
}

// message is the one-line text for v, or "" if v is not a notification.
func (n *Notifier) message(v *view) string {
	switch {
	case v.Type == "readiness" && v.Detail.RuntimeID != "":
		id, state := v.Detail.RuntimeID, v.Detail.Readiness
		prev, known := n.readiness[id]
		n.readiness[id] = state
		if state == prev || !(state == "NEEDS_CONFIRMATION" || state == "ERROR" || (state == "READY" && known)) {
			return "" // READY is news only as a change from a state seen before
		}
		msg := "nudge: " + roleOf(id) + " (" + v.Workspace + ") is " + state
		if state != "READY" && v.Detail.Summary != "" {
			msg += ": " + v.Detail.Summary
		}
		return msg
	case v.Type == "runtime" && v.Runtime != nil && v.Runtime.RuntimeID != "":
		// A runtime whose program crashed or crash-loops is in ERROR too, for its operator.
		id, st := v.Runtime.RuntimeID, v.Runtime.Status
		prev, known := n.status[id]
		n.status[id] = st
		if st != "failed" && st != "exited" || prev == st || !known {
			return "" // a runtime failed or done before the daemon started is not news
		}
		if st == "exited" { // its task is done (seed 003): exit status 0, or its done marker
			how := "its done marker"
			if e := v.Runtime.ExitStatus; e != nil && *e == 0 {
				how = "exit status 0"
			}
			return "nudge: " + roleOf(id) + " (" + v.Workspace + ") finished its task (" + how + ")"
		}
		msg := "nudge: " + roleOf(id) + " (" + v.Workspace + ") failed"
		if e := v.Runtime.ExitStatus; e != nil {
			msg += fmt.Sprintf(" (exit status %d)", *e)
		}
		return msg
	case v.Type == "trigger" && v.Trigger != nil && v.Trigger.State == "failed":
		t := v.Trigger
		if _, done := n.failed[t.TriggerID]; done {
			return ""
		}
		if len(n.failed) >= 4096 {
			clear(n.failed) // bounded; a repeat after this is harmless
		}
		n.failed[t.TriggerID] = struct{}{}
		return "nudge: trigger " + t.TriggerID + " to " + t.Agent + " (" + v.Workspace + ") failed: " + t.ErrorCode
	}
	return ""
}

// roleOf is the role in a runtime id rt_<ws>.<role>.
func roleOf(id string) string {
	if _, role, ok := strings.Cut(id, "."); ok {
		return role
	}
	return id
}

// notify hands msg to the display and the command pools, dropping what does not fit.
func (n *Notifier) notify(ws, msg string, raw []byte) {
	if !n.cfg.NoDisplay && n.conns != nil && ws != "" && !n.nobodyToShow(ws) {
		n.spawn(n.displays, "display", func() { n.display(ws, msg) })
	}
	if n.cfg.Command != "" {
		n.spawn(n.cmds, "command", func() { n.run(raw) })
	}
	if n.cfg.Push != nil {
		n.cfg.Push(ws, msg)
	}
}

func (n *Notifier) spawn(pool chan struct{}, what string, fn func()) {
	select {
	case pool <- struct{}{}:
	default:
		d := n.dropped.Add(1)
		n.log.Warn("notification dropped: too many in flight", "kind", what, "limit", cap(pool), "dropped_total", d)
		return
	}
	n.sent.Add(1)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer func() { <-pool }()
		fn()
	}()
}
