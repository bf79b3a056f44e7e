// Package tui is `nudge watch`: a full-screen live dashboard of every runtime on tcell,
// reading the daemon through api.Client only (one snapshot, then /v1/events), and the
// words a person reads a runtime's state and a receipt by (StateWord, ReceiptWord, Width,
// Truncate), which the CLI's tables and the tmux status line share.
//
// Four pages: the list (runtimes grouped by workspace, filtered with / and sorted with
// o), a runtime's page (its trigger timeline, readiness changes and live screen), its
// tail (the live screen on the whole terminal) and a trigger's page (its stamps and its
// whole audit story). The keys are those a k9s or lazygit user tries first (keys.go):
// j/k, g/G, Home/End, Enter, Esc back, q quit, : commands (prompt.go), the mouse
// (mouse.go); the actions (trigger, pause, resume, stop, answer, attach) work from the
// list and every runtime page. The rows and cards come from package view, which the
// web view serves too.
//
// Run owns the UI goroutine (keys, messages, drawing; the caller's) and the feed goroutine
// (the snapshot and the event stream), which it joins before it returns. Every call to
// the daemon or tmux runs off the UI goroutine with a timeout (callTimeout) and answers
// by message; what could not be refreshed stays on screen marked stale with its time.
package tui

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// watch messages from the I/O goroutines to the UI goroutine.
type (
	watchConnected struct{ snap watchSnapshot }
	watchDown      struct{ err error }
	watchDetail    struct {
		id         string
		tail       []string
		capturedAt time.Time
		tailErr    error
		history    []api.Trigger
		err        error
	}
	watchTrigger struct {
		t     api.Trigger
		audit []api.AuditRecord
		err   error
	}
	watchResult struct{ msg string }
	watchTick   struct{}
)

const (
	watchReconnect = time.Second
	// screenEvery is how often an open runtime page captures the screen again.
	screenEvery = time.Second
)

// watchUI is the dashboard's UI goroutine: keys and stream messages in, actions through
// the API and tmux out. The feed reads the daemon; the view draws.
type watchUI struct {
	ctx    context.Context
	c      *api.Client
	tmux   func(args ...string) []string // tmux argv on nudge's server
	getenv func(string) string
	m      *watchModel
	s      tcell.Screen
	msgs   chan any
	feed   *watchFeed
	view   *watchView
	ssh    func(host string, remote []string) []string
	// attachRun, when set (tests), stands in for handing the terminal to argv.
	attachRun func(argv []string) string
	mouseB    tcell.ButtonMask // the buttons held at the last mouse event (a click is a press)
	calls     sync.WaitGroup   // the calls to the daemon and tmux in flight; Run waits for them
}

// Config is what the dashboard needs: a client of the daemon, the environment (is it
// inside tmux?) and how to run tmux on nudge's server.
type Config struct {
	Client   *api.Client
	Getenv   func(string) string           // nil: os.Getenv
	TmuxArgv func(args ...string) []string // the argv of a tmux command on nudge's server
	// SSHArgv is the argv that runs remote (a tmux client) on host through ssh with a
	// terminal (ssh -t); nil: a runtime on another host cannot be attached from here.
	SSHArgv func(host string, remote []string) []string
}

// Run runs the dashboard on the terminal until q, Esc or ctx ends.
func Run(ctx context.Context, cfg Config) error {
	c := cfg.Client
	// Fail fast, before taking over the terminal, if there is no daemon.
	hctx, cancel := shortCtx(ctx)
	_, err := c.Health(hctx)
	cancel()
	if err != nil {
		return err
	}
	s, err := tcell.NewScreen()
	if err != nil {
		return fmt.Errorf("terminal: %w", err)
	}
	if err := s.Init(); err != nil {
		return fmt.Errorf("terminal: %w", err)
	}
	s.EnableMouse()
	ctx, stop := context.WithCancel(ctx)
	ui := newWatchUI(ctx, cfg, s)
	done := make(chan struct{})
	go func() { defer close(done); ui.feed.stream(ctx) }()
	err = ui.loop()
	stop()
	s.Fini() // restores the terminal (leaves the alternate screen) before we wait
	<-done
	ui.calls.Wait()
	return err
}

// newWatchUI is the dashboard on screen s, not yet fed or drawn.
func newWatchUI(ctx context.Context, cfg Config, s tcell.Screen) *watchUI {
	env := cfg.Getenv
	if env == nil {
		env = os.Getenv
	}
	ui := &watchUI{ctx: ctx, c: cfg.Client, tmux: cfg.TmuxArgv, ssh: cfg.SSHArgv, getenv: env, m: newWatchModel(), s: s, msgs: make(chan any, 256)}
	ui.feed = &watchFeed{ctx: ctx, c: cfg.Client, msgs: ui.msgs}
	ui.view = &watchView{s: s, m: ui.m}
	return ui
}

// apiStateWord is StateWord for a runtime as package api has it.
func apiStateWord(rt api.Runtime) string { return RuntimeState(rt.Runtime) }

// apiReceiptWord is ReceiptWord for a receipt as package api has it.
func apiReceiptWord(t api.Trigger) string {
	return ReceiptWord(t.State, t.Result, t.ErrorCode, t.Fallback)
}

// loop is the UI goroutine: terminal events and stream messages, one redraw per batch.
func (ui *watchUI) loop() error {
	tev := make(chan tcell.Event, 64)
	quit := make(chan struct{})
	defer func() { close(quit) }()
	go ui.s.ChannelEvents(tev, quit)
	tick := time.NewTicker(screenEvery)
	defer tick.Stop()
	ui.s.HideCursor()
	ui.view.draw()
	for {
		select {
		case <-ui.ctx.Done():
			return nil
		case ev, ok := <-tev:
			if !ok {
				return nil
			}
			switch ev := ev.(type) {
			case *tcell.EventResize:
				ui.s.Sync()
			case *tcell.EventKey:
				if ui.key(ev) {
					return nil
				}
			case *tcell.EventMouse:
				ui.mouse(ev)
			}
		case <-tick.C:
			ui.handle(watchTick{})
		case msg := <-ui.msgs:
			ui.handle(msg)
		}
		ui.view.draw()
	}
}

func (ui *watchUI) handle(msg any) {
	m := ui.m
	now := time.Now()
	switch msg := msg.(type) {
	case watchConnected:
		m.applySnapshot(msg.snap, now)
		m.msg = ""
		ui.refreshPage()
	case watchDown:
		m.connected = false
		m.msg = "daemon unreachable; reconnecting"
		if msg.err != nil {
			m.msg += ": " + msg.err.Error()
		}
	case wireEvent:
		if touched := m.applyEvent(msg, now); touched != "" && touched == m.sel && m.page == pageRuntime && msg.Type == "trigger" {
			ui.fetchDetail(m.sel)
		}
	case watchDetail:
		ui.gotDetail(msg, now)
	case watchTrigger:
		if msg.t.TriggerID == m.trig.TriggerID {
			if msg.err != nil {
				m.msg = "trigger " + m.trig.TriggerID + ": " + msg.err.Error()
				return
			}
			m.trig, m.audit = msg.t, msg.audit
		}
	case watchResult:
		m.msg = msg.msg
	case watchAttachHere:
		ui.attachHere(msg.argv, msg.runtime)
	case watchTick:
		if (m.page == pageRuntime || m.page == pageTail) && !m.fetching {
			ui.fetchDetail(m.sel)
		}
	}
}

// gotDetail takes a runtime page's fetch: what failed keeps the older data, marked stale.
func (ui *watchUI) gotDetail(d watchDetail, now time.Time) {
	m := ui.m
	m.fetching = false // (an answer for a runtime no longer shown ends a fetch too)
	if d.id != m.sel {
		return
	}
	if d.tailErr == nil {
		m.tail, m.tailAt, m.tailErr = d.tail, d.capturedAt, ""
		if m.tailAt.IsZero() {
			m.tailAt = now
		}
	} else {
		m.tailErr = d.tailErr.Error()
	}
	if d.err == nil {
		m.setHistory(d.history)
		m.fetchedAt = now
	} else {
		m.msg = "triggers: " + d.err.Error()
	}
}
