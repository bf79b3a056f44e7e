// Package tui is `nudge watch`: a full-screen live dashboard of every runtime on tcell,
// reading the daemon through api.Client only (one snapshot, then /v1/events), and the
// words a person reads a runtime's state and a receipt by (StateWord, ReceiptWord), which
// the CLI's tables and the tmux status line share.
//
// Run owns two goroutines: the UI goroutine (keys, messages, drawing; the caller's) and
// the feed goroutine (the snapshot and the event stream), which Run joins before it
// returns.
package tui

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// `nudge watch`: a full-screen live dashboard. One snapshot (runtimes, open and recent
// triggers), then /v1/events keeps it current; a dropped stream is reconnected and the
// snapshot re-read. Nothing polls. Keys act through the API (pause/resume, force) and tmux
// (switch).

// watch messages from the I/O goroutines to the UI goroutine.
type (
	watchConnected struct{ snap watchSnapshot }
	watchDown      struct{ err error }
	watchDetail    struct {
		id      string
		tail    []string
		history []api.Trigger
		err     error
	}
	watchResult struct{ msg string }
)

const watchReconnect = time.Second

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
}

// watchFeed is the I/O goroutine: a snapshot, then /v1/events, sent to the UI as messages.
type watchFeed struct {
	ctx  context.Context
	c    *api.Client
	msgs chan<- any
}

// watchView draws the model on the screen.
type watchView struct {
	s tcell.Screen
	m *watchModel
}

// Config is what the dashboard needs: a client of the daemon, the environment (is it
// inside tmux?) and how to run tmux on nudge's server.
type Config struct {
	Client   *api.Client
	Getenv   func(string) string           // nil: os.Getenv
	TmuxArgv func(args ...string) []string // the argv of a tmux command on nudge's server
}

// Run runs the dashboard on the terminal until q, Esc or ctx ends.
func Run(ctx context.Context, cfg Config) error {
	c, env := cfg.Client, cfg.Getenv
	if env == nil {
		env = os.Getenv
	}
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
	ctx, stop := context.WithCancel(ctx)
	ui := &watchUI{ctx: ctx, c: c, tmux: cfg.TmuxArgv, getenv: env, m: newWatchModel(), s: s, msgs: make(chan any, 256)}
	ui.feed = &watchFeed{ctx: ctx, c: c, msgs: ui.msgs}
	ui.view = &watchView{s: s, m: ui.m}
	done := make(chan struct{})
	go func() { defer close(done); ui.feed.stream(ctx) }()
	err = ui.loop()
	stop()
	s.Fini() // restores the terminal (leaves the alternate screen) before we wait
	<-done
	return err
}

// apiStateWord is stateWord for a runtime as package api has it.
func apiStateWord(rt api.Runtime) string { return StateWord(rt.Status, rt.Readiness, rt.Paused) }

// apiReceiptWord is receiptWord for a receipt as package api has it.
func apiReceiptWord(t api.Trigger) string {
	return ReceiptWord(t.State, t.Result, t.ErrorCode, t.Fallback)
}

// send hands a message to the UI goroutine unless the UI has gone.
func (f *watchFeed) send(v any) bool {
	select {
	case f.msgs <- v:
		return true
	case <-f.ctx.Done():
		return false
	}
}

// stream keeps /v1/events open: snapshot, then events, reconnecting when it drops.
func (f *watchFeed) stream(ctx context.Context) {
	for ctx.Err() == nil {
		err := f.streamOnce(ctx)
		if ctx.Err() != nil || !f.send(watchDown{err}) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(watchReconnect):
		}
	}
}

func (f *watchFeed) streamOnce(ctx context.Context) error {
	resp, err := f.c.Send(ctx, "GET", "/v1/events", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("events: %s", resp.Status)
	}
	// Subscribed first, then the snapshot: nothing falls between the two.
	snap, err := f.snapshot(ctx)
	if err != nil {
		return err
	}
	if !f.send(watchConnected{snap}) {
		return nil
	}
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var ev wireEvent
			if json.Unmarshal(line, &ev) == nil && !f.send(ev) {
				return nil
			}
		}
		if err != nil {
			return err
		}
	}
}

func (f *watchFeed) snapshot(ctx context.Context) (watchSnapshot, error) {
	ctx, cancel := shortCtx(ctx)
	defer cancel()
	var s watchSnapshot
	var err error
	if s.runtimes, err = f.c.Runtimes(ctx, ""); err != nil {
		return s, err
	}
	open, err := f.c.Triggers(ctx, api.TriggerFilter{OpenOnly: true})
	if err != nil {
		return s, err
	}
	for _, rt := range s.runtimes {
		ts, err := f.c.Triggers(ctx, api.TriggerFilter{RuntimeID: rt.RuntimeID, Newest: true, Limit: 1})
		if err != nil {
			return s, err
		}
		s.triggers = append(s.triggers, ts...)
	}
	s.triggers = append(s.triggers, open...)
	return s, nil
}

// loop is the UI goroutine: terminal events and stream messages, one redraw per batch.
func (ui *watchUI) loop() error {
	tev := make(chan tcell.Event, 64)
	quit := make(chan struct{})
	defer close(quit)
	go ui.s.ChannelEvents(tev, quit)
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
			}
		case msg := <-ui.msgs:
			ui.handle(msg)
		}
		ui.view.draw()
	}
}

func (ui *watchUI) handle(msg any) {
	m := ui.m
	switch msg := msg.(type) {
	case watchConnected:
		m.applySnapshot(msg.snap)
		m.msg = ""
	case watchDown:
		m.connected = false
		m.msg = "event stream lost; reconnecting"
		if msg.err != nil {
			m.msg += ": " + msg.err.Error()
		}
	case wireEvent:
		if touched := m.applyEvent(msg); touched != "" && m.detail && touched == m.sel {
			ui.fetchDetail(m.sel)
		}
	case watchDetail:
		if msg.id == m.sel {
			if msg.err != nil {
				m.msg = "detail: " + msg.err.Error()
			}
			m.tail, m.history = msg.tail, msg.history
		}
	case watchResult:
		m.msg = msg.msg
	}
}

// key handles one key; it reports whether to quit.
func (ui *watchUI) key(ev *tcell.EventKey) bool {
	m := ui.m
	if m.forcing != "" {
		switch ev.Key() {
		case tcell.KeyEscape:
			m.forcing, m.forceReason, m.msg = "", nil, "force cancelled"
		case tcell.KeyEnter:
			id, reason := m.forcing, strings.TrimSpace(string(m.forceReason))
			if reason == "" {
				m.msg = "a reason is required"
				return false
			}
			m.forcing, m.forceReason = "", nil
			ui.async(func(ctx context.Context) string {
				t, err := ui.c.Force(ctx, id, api.ForceRequest{Reason: reason, Intent: "human_override"})
				if err != nil {
					return "force " + id + ": " + err.Error()
				}
				return "forced " + id + ": " + apiReceiptWord(t)
			})
		case tcell.KeyBackspace, tcell.KeyBackspace2:
			if n := len(m.forceReason); n > 0 {
				m.forceReason = m.forceReason[:n-1]
			}
		case tcell.KeyRune:
			if len(m.forceReason) < 200 {
				m.forceReason = append(m.forceReason, ev.Rune())
			}
		}
		return false
	}
	switch ev.Key() {
	case tcell.KeyCtrlC:
		return true
	case tcell.KeyEscape:
		if m.detail {
			m.detail = false
			return false
		}
		return true
	case tcell.KeyUp:
		m.move(-1)
		ui.refreshDetail()
	case tcell.KeyDown:
		m.move(1)
		ui.refreshDetail()
	case tcell.KeyEnter:
		if _, ok := m.selected(); ok {
			m.detail, m.tail, m.history = true, nil, nil
			ui.fetchDetail(m.sel)
		}
	case tcell.KeyRune:
		switch ev.Rune() {
		case 'q':
			if m.detail {
				m.detail = false
				return false
			}
			return true
		case 'k':
			m.move(-1)
			ui.refreshDetail()
		case 'j':
			m.move(1)
			ui.refreshDetail()
		case 'r':
			ui.refreshDetail()
		case 's':
			ui.switchTo()
		case 'p':
			ui.togglePause()
		case 'f':
			ui.startForce()
		}
	}
	return false
}

func (ui *watchUI) refreshDetail() {
	if ui.m.detail {
		ui.fetchDetail(ui.m.sel)
	}
}

// async runs fn off the UI goroutine and shows its answer.
func (ui *watchUI) async(fn func(ctx context.Context) string) {
	go func() {
		ctx, cancel := shortCtx(ui.ctx)
		defer cancel()
		ui.feed.send(watchResult{fn(ctx)})
	}()
}

func (ui *watchUI) fetchDetail(id string) {
	go func() {
		ctx, cancel := shortCtx(ui.ctx)
		defer cancel()
		d := watchDetail{id: id}
		var tv api.Tail
		if tv, d.err = ui.c.Tail(ctx, id, 200); d.err == nil {
			d.tail = tv.Lines
		}
		var err error
		if d.history, err = ui.c.Triggers(ctx, api.TriggerFilter{RuntimeID: id, Newest: true, Limit: 20}); err != nil && d.err == nil {
			d.err = err
		}
		ui.feed.send(d)
	}()
}

func (ui *watchUI) switchTo() {
	rt, ok := ui.m.selected()
	if !ok {
		return
	}
	target := orDefault(rt.PaneID, rt.Target)
	if ui.getenv("TMUX") == "" {
		ui.m.msg = "not inside tmux: run `nudge switch " + rt.RuntimeID + "` or `nudge attach " + rt.WorkspaceID + "`"
		return
	}
	argv := ui.tmux("switch-client", "-t", target)
	ui.async(func(ctx context.Context) string {
		out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
		if err != nil {
			return "switch-client: " + err.Error() + ": " + strings.TrimSpace(string(out))
		}
		return "switched to " + rt.RuntimeID + " (" + target + ")"
	})
}

func (ui *watchUI) togglePause() {
	rt, ok := ui.m.selected()
	if !ok {
		return
	}
	verb := "pause"
	if rt.Paused {
		verb = "resume"
	}
	ui.async(func(ctx context.Context) string {
		act := ui.c.Pause
		if verb == "resume" {
			act = ui.c.Resume
		}
		if _, err := act(ctx, rt.RuntimeID, "nudge watch"); err != nil {
			return verb + " " + rt.RuntimeID + ": " + err.Error()
		}
		return verb + "d " + rt.RuntimeID
	})
}

func (ui *watchUI) startForce() {
	rt, ok := ui.m.selected()
	if !ok {
		return
	}
	id := ui.m.deferred[rt.RuntimeID]
	if id == "" {
		ui.m.msg = "no deferred trigger for " + rt.RuntimeID
		return
	}
	ui.m.forcing, ui.m.forceReason, ui.m.msg = id, nil, ""
}

// Drawing. Every string is cut to the screen width; nothing wraps.

var (
	stDefault = tcell.StyleDefault
	stHeader  = tcell.StyleDefault.Bold(true)
	stSel     = tcell.StyleDefault.Reverse(true)
	stDim     = tcell.StyleDefault.Foreground(tcell.ColorGray)
)

// stateStyle colours a state word: READY green, BUSY yellow, NEEDS_CONFIRMATION magenta,
// ERROR/FAILED red, OFFLINE/EXITED grey.
func stateStyle(word string) tcell.Style {
	switch word {
	case string(nudge.Ready):
		return stDefault.Foreground(tcell.ColorGreen)
	case string(nudge.Busy):
		return stDefault.Foreground(tcell.ColorYellow)
	case string(nudge.NeedsConfirmation):
		return stDefault.Foreground(tcell.ColorFuchsia)
	case string(nudge.ErrorState), "FAILED":
		return stDefault.Foreground(tcell.ColorRed)
	case "OFFLINE", "DEREGISTERED", "EXITED":
		return stDim
	case "PAUSED":
		return stDefault.Foreground(tcell.ColorBlue)
	default:
		return stDefault
	}
}

// put writes s at (x, y), cut at the screen's right edge, and returns the next x.
func (v *watchView) put(x, y int, s string, st tcell.Style) int {
	w, _ := v.s.Size()
	for _, r := range s {
		if x >= w {
			break
		}
		if r < ' ' {
			r = ' '
		}
		v.s.SetContent(x, y, r, nil, st)
		x++
	}
	return x
}

// fill pads row y from x to the right edge with style st.
func (v *watchView) fill(x, y int, st tcell.Style) {
	w, _ := v.s.Size()
	for ; x < w; x++ {
		v.s.SetContent(x, y, ' ', nil, st)
	}
}

func pad(s string, n int) string {
	s = Truncate(s, n)
	if k := len([]rune(s)); k < n {
		s += strings.Repeat(" ", n-k)
	}
	return s
}

func (v *watchView) draw() {
	s, m := v.s, v.m
	s.Clear()
	w, h := s.Size()
	conn := "live"
	if !m.connected {
		conn = "reconnecting"
	}
	title := fmt.Sprintf("nudge watch  %d runtimes  [%s]  %s", len(m.rts), conn, time.Now().Format("15:04:05"))
	v.put(0, 0, title, stHeader)
	if m.detail {
		v.drawDetail(w, h)
	} else {
		v.drawList(w, h)
	}
	// Bottom: prompt or message, then the keys.
	switch {
	case m.forcing != "":
		v.put(0, h-2, "force "+m.forcing+" - reason: "+string(m.forceReason)+"_", stHeader)
	case m.msg != "":
		v.put(0, h-2, m.msg, stDefault)
	case m.alert != "":
		v.put(0, h-2, "ALERT: "+m.alert, stDefault.Foreground(tcell.ColorRed))
	}
	keys := "↑↓ select  ⏎ detail  s switch  p pause/resume  f force  q quit"
	if m.detail {
		keys = "↑↓ runtime  r refresh  s switch  p pause/resume  f force  q/Esc back"
	}
	if m.forcing != "" {
		keys = "type a reason  ⏎ force-deliver  Esc cancel"
	}
	v.put(0, h-1, keys, stDim)
	s.Show()
}

// column widths for the list, shrunk to fit narrow terminals.
func watchColumns(w int) (id, state, q int) {
	id, state, q = 24, 22, 3
	if w < 100 {
		id, state = 20, 20
	}
	return
}

func (v *watchView) drawList(w, h int) {
	m := v.m
	cid, cst, cq := watchColumns(w)
	y := 1
	hdr := "  " + pad("RUNTIME", cid) + " " + pad("STATE", cst) + " " + pad("Q", cq) + " LAST RECEIPT"
	v.put(0, y, hdr, stHeader)
	y++
	for _, rt := range m.order() {
		if y >= h-2 {
			break
		}
		st := stDefault
		mark := "  "
		if rt.RuntimeID == m.sel {
			st, mark = stSel, "> "
		}
		word := apiStateWord(rt)
		x := v.put(0, y, mark+pad(rt.RuntimeID, cid)+" ", st)
		state := word
		if rt.OperatorBusy {
			state += " +human"
		}
		x = v.put(x, y, pad(state, cst), stateStyle(word))
		receipt := "-"
		if t, ok := m.last[rt.RuntimeID]; ok {
			receipt = t.TriggerID + " " + apiReceiptWord(t) + " " + Ago(t.UpdatedAt, time.Now())
		}
		x = v.put(x, y, " "+pad(fmt.Sprint(m.depth(rt.RuntimeID)), cq)+" "+receipt, st)
		if rt.RuntimeID == m.sel {
			v.fill(x, y, st)
		}
		y++
	}
	if len(m.rts) == 0 {
		v.put(2, y, "no runtimes (nudge spawn ...)", stDim)
	}
}

func (v *watchView) drawDetail(w, h int) {
	m := v.m
	rt, ok := m.selected()
	if !ok {
		v.put(0, 1, "runtime gone", stDim)
		return
	}
	word := apiStateWord(rt)
	x := v.put(0, 1, rt.RuntimeID+"  "+rt.Agent+"  "+orDash(rt.PaneID)+"  ", stHeader)
	x = v.put(x, 1, word, stateStyle(word))
	busy := ""
	if rt.OperatorBusy {
		busy = "  human typing"
	}
	if rt.Paused {
		busy += "  triggers paused"
	}
	v.put(x, 1, "  "+string(rt.Status)+busy+"  "+Truncate(rt.Summary, 40), stDefault)
	y := 2
	v.put(0, y, "Triggers (newest first):", stHeader)
	y++
	maxHist := min(len(m.history), max(2, (h-6)/3))
	for _, t := range m.history[:maxHist] {
		v.put(2, y, t.TriggerID+"  "+apiReceiptWord(t)+"  "+Ago(t.UpdatedAt, time.Now())+"  "+strings.ReplaceAll(t.Prompt, "\n", " "), stDefault)
		y++
	}
	if len(m.history) == 0 {
		v.put(2, y, "none", stDim)
		y++
	}
	v.put(0, y, "Output:", stHeader)
	y++
	room := h - 2 - y
	lines := m.tail
	if len(lines) > room && room >= 0 {
		lines = lines[len(lines)-room:]
	}
	for _, l := range lines {
		v.put(2, y, strings.ReplaceAll(l, "\t", "    "), stDefault)
		y++
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
