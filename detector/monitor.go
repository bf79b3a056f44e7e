package detector

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/panes"
)

// Registry is what the Monitor needs of the runtime registry; *panes.Registry satisfies
// it. The Monitor reads runtimes, persists readiness, summary, operator_busy and session
// id through Update, and sends its captures over the workspace's control connection.
type Registry interface {
	Get(id string) (nudge.Runtime, bool)
	List() []nudge.Runtime
	Update(id string, fn func(*nudge.Runtime)) (nudge.Runtime, error)
	Conn(workspace string) (*controlmode.Conn, error)
	Profile(name string) (panes.Profile, bool)
}

var _ Registry = (*panes.Registry)(nil)

// Defaults of MonitorConfig.
const (
	DefaultQuietWindow    = 20 * time.Second       // seed 000 §12: recent human input window
	DefaultReadyQuiet     = 300 * time.Millisecond // when a profile sets no ReadyQuiet
	DefaultCaptureTimeout = 5 * time.Second
	// HumanChannel is the tmux wait-for channel the Any binding signals.
	HumanChannel = "nudge-human"
)

// MonitorConfig configures a Monitor. Only Registry is required; the zero value of every
// other field is documented on it.
type MonitorConfig struct {
	// QuietWindow is how long a pane counts as operator_busy after a human key
	// (DefaultMonitorConfig: DefaultQuietWindow, 20s). 0 means none: a key holds triggers
	// only while it is being typed; a draft in the composer still holds them.
	QuietWindow time.Duration
	// Packs are the readiness packs by name; nil means LoadPacks("").
	Packs map[string]*Pack
	// Registry is the runtime registry (required).
	Registry Registry

	// Tmux, SocketName and SocketPath select nudge's tmux server for the key-event
	// connection and the Any binding (as in controlmode.Config). "" means "tmux" and
	// tmux's default server.
	Tmux, SocketName, SocketPath string
	// SSH is the ssh binary and SSHConfig an ssh -F file for a workspace on another host
	// (Runtime.Host): its key-event connection and binding go through ssh -T to that host.
	// "" means "ssh" and the user's own ssh config.
	SSH, SSHConfig string
	// BindKeys installs the root-table `Any` binding that reports human keys exactly, on
	// every tmux server with a runtime (nudge's own, and a user's own server a workspace
	// is bound to: Runtime.TmuxSocket), removed again on Close. false (the zero value) means no binding: human input is
	// inferred from %output on panes nudge did not type into, confirmed by list-clients.
	// DefaultMonitorConfig sets it.
	BindKeys bool

	// Bus: the Monitor reads pane output (nudge.Bus.ReadOutput), runtime changes and pane
	// events on it, and publishes what it learns: nudge.ReadinessChanged (after a pane's
	// readiness, summary or operator_busy changed and was persisted), nudge.HumanDone and
	// then nudge.OperatorQuiet (a pane stops being operator_busy), nudge.QueueEmptied (an
	// agent emptied its own input queue), and for telemetry Captured (after every capture)
	// and LLMCall (a question to the LLM ended, however it ended). nil: it is fed by hand
	// (Feed, Event, Refresh, Reclassify) and tells no one.
	Bus *nudge.Bus
	// LLM classifies a screen the pack was unsure about (Confident false). nil means the
	// packs decide alone.
	LLM *LLM
	// LLMSettle is how long such a screen must stay unchanged before the LLM is asked about
	// it (seed 002: a screen stable for a few polls), so that a build or a stream pausing
	// now and then does not cost a request per pause; 0 means DefaultLLMSettle (2s).
	LLMSettle time.Duration

	// CaptureTimeout bounds one capture (and one list-clients query); 0 means 5s.
	CaptureTimeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger; nil means a null logger.
	Logger hclog.Logger
}

// DefaultMonitorConfig returns the seed defaults with the Any binding enabled; set
// Registry (and the server selection) before use.
func DefaultMonitorConfig() MonitorConfig {
	return MonitorConfig{QuietWindow: DefaultQuietWindow, BindKeys: true, CaptureTimeout: DefaultCaptureTimeout,
		LLMSettle: DefaultLLMSettle}
}

func (c *MonitorConfig) setDefaults() error {
	if c.Registry == nil {
		return errors.New("detector: MonitorConfig.Registry is required")
	}
	if c.QuietWindow < 0 {
		return errors.New("detector: MonitorConfig.QuietWindow must not be negative")
	}
	if c.CaptureTimeout <= 0 {
		c.CaptureTimeout = DefaultCaptureTimeout
	}
	if c.LLMSettle <= 0 {
		c.LLMSettle = DefaultLLMSettle
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Packs == nil {
		p, err := LoadPacks("")
		if err != nil {
			return err
		}
		c.Packs = p
	}
	return nil
}

// Monitor is the live half of the detector: it follows every managed pane's output and
// the human keys on nudge's tmux server, keeps each runtime's readiness and operator_busy
// current (persisted through the Registry), and answers the inject pipeline's gates
// (Collision, Readiness, Composer). It owns one goroutine per runtime, a refresh
// goroutine and, with BindKeys, one key-event control connection; Close stops them all.
type Monitor struct {
	cfg    MonitorConfig
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	paneIndex          // the watched panes and key watches
	report    reporter // persists and reports what is learnt of a pane
	asker     llmAsker // asks the LLM about screens the packs were unsure of

	refresh   chan struct{} // cap 1: re-read the registry
	out       func()        // stops reading pane output
	sub       *nudge.Client // runtime changes and pane events
	closeOnce sync.Once
}

// paneIndex is the set of watched panes, by runtime id and by host and pane number, and
// the key watches by host. sync rewrites it under mu (Close marks it closed); Feed, Event
// and the gates look panes up in it.
type paneIndex struct {
	mu     sync.RWMutex
	panes  map[string]*paneState   // by runtime id
	byPane map[hostPane]*paneState // by host and tmux pane number (%N)
	wsHost map[string]string       // workspace -> serverKey, from the runtimes
	human  map[string]*humanWatch  // by serverKey: one key-event connection per tmux server
	closed bool
}

// NewMonitor starts watching every runtime in the registry: each gets a readiness capture
// shortly after start. The caller must Close the Monitor.
func NewMonitor(cfg MonitorConfig) (*Monitor, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Monitor{
		cfg: cfg, ctx: ctx, cancel: cancel,
		paneIndex: paneIndex{
			panes:  map[string]*paneState{},
			byPane: map[hostPane]*paneState{},
			wsHost: map[string]string{},
			human:  map[string]*humanWatch{},
		},
		refresh: make(chan struct{}, 1),
	}
	m.report.cfg = &m.cfg
	m.asker = llmAsker{cfg: &m.cfg, wg: &m.wg, report: &m.report}
	m.out = cfg.Bus.ReadOutput(m)
	m.sub = nudge.NewClient(cfg.Bus, "detector", 256)
	nudge.Subscribe(m.sub, m.runtimeChanged)
	nudge.Subscribe(m.sub, m.Event)
	m.sync()
	m.wg.Add(1)
	go m.refreshLoop()
	return m, nil
}

// runtimeChanged watches a new runtime (or a relaunch in a new pane) now, and reads
// the screen of a new program afresh, even if it reads as the old one's did.
func (m *Monitor) runtimeChanged(ev nudge.RuntimeChanged) {
	rt := ev.Runtime
	if ev.Prev == "" || rt.Status == nudge.StatusStarting {
		m.Refresh()
	}
	if s := rt.Status; s != ev.Prev && (s == nudge.StatusStarting || s == nudge.StatusFallbackResume) {
		m.Reclassify(rt.RuntimeID)
	}
}

// PaneOutput takes a managed pane's output (nudge.OutputReader): Feed.
func (m *Monitor) PaneOutput(runtimeID string, data []byte) { m.Feed(runtimeID, data) }

// Close removes the Any binding (if this Monitor installed it), stops every goroutine and
// the key-event connection, and waits for them. Idempotent.
func (m *Monitor) Close() error {
	m.closeOnce.Do(func() {
		m.out()
		m.sub.Close()
		m.mu.Lock()
		m.closed = true
		watches := make([]*humanWatch, 0, len(m.human))
		for _, h := range m.human {
			watches = append(watches, h)
		}
		m.mu.Unlock()
		for _, h := range watches {
			h.unbind()
		}
		m.cancel()
		for _, h := range watches {
			h.wake()
		}
		m.wg.Wait()
	})
	return nil
}

// Feed takes decoded output of a managed pane (PaneOutput, from the Bus). It runs on the
// control connection's read goroutine: it allocates nothing, never blocks on I/O, and
// only records the output. data is not retained.
//
// It wakes the runtime's goroutine only when that goroutine waits for output: the first
// chunk after a quiet verdict (armed), or output nudge did not cause while no human check
// is pending. A pane that streams costs its goroutine nothing per line: each chunk only
// pushes the quiet timer back, which fires once the pane has been quiet for readyQuiet.
func (m *Monitor) Feed(runtimeID string, data []byte) {
	m.mu.RLock()
	ps := m.panes[runtimeID]
	m.mu.RUnlock()
	if ps == nil {
		m.poke()
		return
	}
	now := m.cfg.Now().UnixNano()
	ps.outSeq.Add(1)
	ps.lastOut.Store(now)
	// Push the quiet capture back to readyQuiet after this chunk. A Reset is a few
	// stores under the timer's lock, no wake: a spinner's pane goroutine then sleeps
	// until the row stops, instead of waking every ~readyQuiet to find it still moving.
	ps.quiet.Reset(ps.readyQuiet)
	wake := false
	if now >= ps.injectUntil.Load() && (ps.keys == nil || !ps.keys.Load()) {
		wake = !ps.maybeHuman.Load() && ps.maybeHuman.CompareAndSwap(false, true)
	}
	if ps.scanning.Load() {
		ps.appendTail(data)
	}
	if ps.armed.Load() && ps.armed.CompareAndSwap(true, false) {
		wake = true
	}
	if wake {
		ps.wakes.Add(1)
		signal(ps.outCh)
	}
}

// LastOutput is when the runtime's pane last printed (by the Monitor's clock); zero when
// it has printed nothing since the Monitor began to watch it, or is not watched.
func (m *Monitor) LastOutput(runtimeID string) time.Time {
	if ps := m.get(runtimeID); ps != nil {
		if n := ps.lastOut.Load(); n != 0 {
			return time.Unix(0, n)
		}
	}
	return time.Time{}
}

// Event takes what a workspace's connection reported of its panes (nudge.PaneEvent, from
// the Bus).
func (m *Monitor) Event(ev nudge.PaneEvent) {
	switch ev.Kind {
	case nudge.PaneModeChanged:
		if ps := m.pane(ev.Workspace, ev.Pane); ps != nil {
			signal(ps.modeCh)
		} else {
			m.poke()
		}
	case nudge.PaneOutputPaused:
		if ps := m.pane(ev.Workspace, ev.Pane); ps != nil {
			ps.outSeq.Add(1)
			signal(ps.outCh) // output was dropped: resync with a capture once quiet
		}
	case nudge.PaneLayoutChanged:
		m.poke()
		m.mu.RLock()
		for _, h := range m.human {
			signal(h.hint)
		}
		m.mu.RUnlock()
	}
}

// Injecting tells the Monitor that nudge itself types into the pane until until: output
// before then is not a human's. Only the %output fallback needs it (nudge's send-keys
// never runs root bindings).
func (m *Monitor) Injecting(runtimeID string, until time.Time) {
	m.mu.RLock()
	ps := m.panes[runtimeID]
	m.mu.RUnlock()
	if ps != nil {
		ps.injectUntil.Store(until.UnixNano())
	}
}

// Keyed records keys a person sent to the runtime's pane by another way than a tmux
// client (the web view's terminal), which no key binding sees: the collision gate holds
// triggers for the quiet window after them, as after keys typed at the pane.
func (m *Monitor) Keyed(runtimeID string) {
	if ps := m.get(runtimeID); ps != nil {
		ps.humanKey(m.cfg.Now())
	}
}

// Collision reports whether a human is at the pane: keys within the quiet window (until is
// the last key + QuietWindow), a draft in the composer or copy mode (until zero: unknown).
func (m *Monitor) Collision(rt nudge.Runtime) (busy bool, until time.Time, why string) {
	ps := m.get(rt.RuntimeID)
	if ps == nil {
		if rt.OperatorBusy {
			return true, time.Time{}, "operator_busy"
		}
		return false, time.Time{}, ""
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	now := m.cfg.Now()
	switch {
	case ps.draft != "":
		return true, time.Time{}, "draft in composer"
	case ps.inMode:
		return true, time.Time{}, "pane in copy mode"
	case !ps.lastKey.IsZero() && now.Before(ps.lastKey.Add(m.cfg.QuietWindow)):
		return true, ps.lastKey.Add(m.cfg.QuietWindow), "human typing"
	case ps.checking:
		return true, time.Time{}, "checking for a draft"
	case !ps.humanReported.IsZero() && now.Before(ps.humanReported.Add(humanTakeWait)):
		return true, ps.humanReported.Add(humanTakeWait), "reporting the human's intervention"
	}
	return false, time.Time{}, ""
}

// humanTakeWait bounds how long Collision holds a pane for its HumanDone to be taken up
// (HumanTaken): a Monitor whose HumanDone no one takes up lets triggers go after it.
const humanTakeWait = 5 * time.Second

// HumanTaken says that the subscriber of nudge.HumanDone (the pipeline) has set up what
// the human's intervention in runtimeID's pane asks (the orchestrator's sync, holding
// the worker's triggers): Collision no longer holds the pane for it. It never blocks.
func (m *Monitor) HumanTaken(runtimeID string) {
	if ps := m.get(runtimeID); ps != nil {
		ps.mu.Lock()
		ps.humanReported = time.Time{}
		ps.mu.Unlock()
	}
}

// Readiness is the pane's current readiness as last classified (BUSY while output flows,
// and while the agent takes in nudge's prompt: see Submitted; NEEDS_CONFIRMATION while
// output flows after a capture showed a dialog, until a capture shows it gone: markBusy).
func (m *Monitor) Readiness(rt nudge.Runtime) nudge.Readiness {
	if ps := m.get(rt.RuntimeID); ps != nil {
		ps.mu.Lock()
		r := ps.class.State
		if r == nudge.Ready && ps.intake.pending(m.cfg.Now()) && !ps.intake.shown(ps.class) {
			r = nudge.Busy // the quiet capture that says so may not have run yet
		}
		ps.mu.Unlock()
		if r != "" {
			return r
		}
	}
	if rt.Readiness != "" {
		return rt.Readiness
	}
	return nudge.Unknown
}

// Composer captures the pane now and returns the text in the agent's composer (a human's
// draft), "" when it is empty. It also updates the draft the Collision gate sees.
func (m *Monitor) Composer(ctx context.Context, rt nudge.Runtime) (string, error) {
	sc, err := m.capture(ctx, rt)
	if err != nil {
		return "", err
	}
	pack := m.packFor(rt)
	if pack == nil {
		return "", nil
	}
	c := ClassifyScreen(pack, Screen{Text: sc.text, CursorY: sc.cursorY})
	if ps := m.get(rt.RuntimeID); ps != nil {
		ps.mu.Lock()
		dequeued := ps.readInput(pack, c)
		ps.inMode = sc.inMode
		ps.mu.Unlock()
		if dequeued {
			nudge.Publish(m.cfg.Bus, nudge.QueueEmptied{RuntimeID: ps.id, At: m.cfg.Now()})
		}
		m.report.syncBusy(ps)
	}
	return c.Draft, nil
}

// ours reports whether a composer's text is nudge's own, not a human's draft: an envelope
// typed and waiting for its Enter (or put back by an agent that cancelled its turn: Gemini
// CLI; a tall one may show only its end), or the placeholder(s) the agent folded the text nudge
// typed last into (a large paste shown as "[Pasted Content 5621 chars]").
func (ps *paneState) ours(pack *Pack, d string) bool {
	if strings.Contains(d, "[BRIDGE_TRIGGER ") || strings.Contains(d, "[/BRIDGE_TRIGGER]") {
		return true
	}
	return pack != nil && pack.OursAll(d, ps.typed[:])
}

// typedKept is how many of the texts nudge typed last a pane remembers: an agent may put
// an earlier one back into its composer (Gemini CLI does after a failed turn).
const typedKept = 4

// Typed records the text nudge just typed into the runtime's input line, so that the
// agent's folded form of it (a paste placeholder) is known as nudge's own.
func (m *Monitor) Typed(runtimeID, text string) {
	if ps := m.get(runtimeID); ps != nil {
		ps.mu.Lock()
		copy(ps.typed[1:], ps.typed[:typedKept-1])
		ps.typed[0] = text
		ps.mu.Unlock()
	}
}

// Ours reports whether composer (as Composer returned it) holds text as the runtime's
// agent shows it after folding a large paste into placeholders.
func (m *Monitor) Ours(rt nudge.Runtime, composer, text string) bool {
	pack := m.packFor(rt)
	return pack != nil && pack.Holds(composer, text)
}

// Queued reports whether the last capture of the runtime (Composer's or the quiet one)
// showed input waiting in the agent's own queue.
func (m *Monitor) Queued(rt nudge.Runtime) bool {
	if ps := m.get(rt.RuntimeID); ps != nil {
		ps.mu.Lock()
		defer ps.mu.Unlock()
		return ps.queued
	}
	return false
}

// get returns the watched pane of runtime id.
func (ix *paneIndex) get(id string) *paneState {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.panes[id]
}

// hostPane names a pane across tmux servers (serverKey: a host and a socket).
type hostPane struct {
	host string // serverKey
	n    int
}

// pane returns the watched pane %n of a workspace's tmux server.
func (ix *paneIndex) pane(workspace string, n int) *paneState {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.byPane[hostPane{ix.wsHost[workspace], n}]
}

// hostPane returns the watched pane %n on a tmux server (serverKey).
func (ix *paneIndex) hostPane(host string, n int) *paneState {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.byPane[hostPane{host, n}]
}

// poke asks the refresh goroutine to re-read the registry.
func (m *Monitor) poke() { signal(m.refresh) }

// Refresh makes the Monitor re-read the registry soon: a runtime was recorded or got a
// new pane. Without it a pane whose only output came before its runtime was recorded
// (a prompt drawn at once) would not be watched until something else happened in it.
// It never blocks.
func (m *Monitor) Refresh() { m.poke() }

func (m *Monitor) refreshLoop() {
	defer m.wg.Done()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.refresh:
			m.sync()
		}
	}
}

// sync makes the set of watched panes match the registry: new runtimes get a goroutine,
// removed ones are stopped, pane ids are re-indexed.
func (m *Monitor) sync() {
	rts := m.cfg.Registry.List()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	seen := make(map[string]bool, len(rts))
	m.byPane = make(map[hostPane]*paneState, len(rts))
	for _, rt := range rts {
		seen[rt.RuntimeID] = true
		key := serverKey(rt)
		m.wsHost[rt.WorkspaceID] = key
		h := m.human[key]
		if h == nil && m.cfg.BindKeys {
			h = newHumanWatch(m, rt.Host, rt.TmuxSocket)
			m.human[key] = h
			m.wg.Add(1)
			go h.run()
		}
		ps := m.panes[rt.RuntimeID]
		if ps == nil {
			ps = m.newPane(rt)
			if h != nil {
				ps.keys = &h.bindOK
			}
			m.panes[rt.RuntimeID] = ps
			m.wg.Add(1)
			go (&paneLoop{m: m, ps: ps}).run()
		}
		if n, ok := paneNumber(rt.PaneID); ok {
			m.byPane[hostPane{key, n}] = ps
		}
	}
	for id, ps := range m.panes {
		if !seen[id] {
			ps.cancel()
			delete(m.panes, id)
		}
	}
}

// paneNumber parses "%N".
func paneNumber(id string) (int, bool) {
	if !strings.HasPrefix(id, "%") {
		return 0, false
	}
	n, err := strconv.Atoi(id[1:])
	return n, err == nil
}

// signal does a non-blocking send on a capacity-1 channel.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
