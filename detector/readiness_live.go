package detector

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/panes"
)

// tailCap bounds the ANSI-stripped output kept for the session-id scan.
const tailCap = 16 << 10

// paneState is one runtime as the Monitor sees it. The atomics and tail are written by
// Feed on a read goroutine; the rest belongs to the runtime's goroutine and is read by
// the gates under mu.
type paneState struct {
	id     string
	host   string       // the runtime's host ("" local): pane ids are per tmux server
	keys   *atomic.Bool // its host's Any binding is installed (nil: no binding)
	ctx    context.Context
	cancel context.CancelFunc

	outSeq      atomic.Uint64 // bumped on every output chunk
	lastOut     atomic.Int64  // unix nanos of the last chunk
	injectUntil atomic.Int64  // unix nanos: output before this is nudge's own
	maybeHuman  atomic.Bool   // fallback: output nudge did not cause (left set while a check is pending)
	armed       atomic.Bool   // the goroutine waits for output: the next chunk wakes it
	wakes       atomic.Uint64 // times Feed woke the goroutine (tests count them)
	quietFires  atomic.Uint64 // times the quiet timer woke it (tests count them)
	scanning    atomic.Bool   // no session id known yet: keep a tail of the output
	outCh       chan struct{} // cap 1: output arrived
	keyCh       chan struct{} // cap 1: a human key was seen
	modeCh      chan struct{} // cap 1: %pane-mode-changed
	intakeCh    chan struct{} // cap 1: an intake began or ended (Submitted, Settled)
	// quiet fires once the pane has shown no output for readyQuiet: every chunk resets
	// it (Feed), so a pane that keeps redrawing never wakes its goroutine for it. Set
	// by newPane, before Feed can see the pane; only the pane goroutine receives from it.
	quiet      *time.Timer
	readyQuiet time.Duration // the profile's ReadyQuiet, looked up once

	tailMu sync.Mutex
	tail   []byte
	plain  nudge.Plain

	persistMu sync.Mutex // serialises operator_busy decisions with their persistence

	mu    sync.Mutex
	class Classification // last verdict (State BUSY while output flows)
	// dialog: the last capture's verdict was NEEDS_CONFIRMATION. Output that follows (a
	// title that blinks, a timer or a spinner above the dialog, the dialog redrawn) is no
	// sign the dialog closed: the verdict stands until a capture shows it gone (markBusy,
	// paneLoop.dialogCheck).
	dialog    bool
	draft     string
	typed     [typedKept]string // the texts nudge typed last (Typed), newest first: ours in any form
	input     nudge.InputLine   // what the input line holds, as last persisted
	queued    bool              // the last capture showed input queued in the agent
	inMode    bool
	lastKey   time.Time // last human key seen
	checking  bool      // keys seen since the last capture taken after they went quiet
	humanSeen bool      // a human typed here since the last HumanDone
	// humanReported: when the pane went quiet after a human typed and HumanDone was
	// published; Collision says busy until HumanTaken (or humanTakeWait after it). Zero:
	// none waits.
	humanReported time.Time
	opBusy        bool      // operator_busy as last persisted
	confirmAt     time.Time // last fallback list-clients query
	llm           llmAsk    // the LLM classifier's last question and answer (llm_live.go)
	intake        intake    // nudge's prompt the agent has not shown it took yet (intake.go)
	snap          Snapshot  // what the captures showed (snapshot.go)
}

func (m *Monitor) newPane(rt nudge.Runtime) *paneState {
	ctx, cancel := context.WithCancel(m.ctx)
	ps := &paneState{
		id: rt.RuntimeID, host: rt.Host, ctx: ctx, cancel: cancel,
		outCh: make(chan struct{}, 1), keyCh: make(chan struct{}, 1), modeCh: make(chan struct{}, 1),
		intakeCh: make(chan struct{}, 1),
		opBusy:   rt.OperatorBusy,
	}
	ps.armed.Store(true) // the first output marks BUSY
	ps.readyQuiet = DefaultReadyQuiet
	if p, ok := m.cfg.Registry.Profile(rt.Agent); ok && p.ReadyQuiet > 0 {
		ps.readyQuiet = p.ReadyQuiet
	}
	ps.quiet = time.NewTimer(ps.readyQuiet) // the first capture soon
	if rt.SessionID == "" {
		if p, ok := m.cfg.Registry.Profile(rt.Agent); ok && p.SessionIDPattern != "" {
			ps.tail = make([]byte, 0, tailCap)
			ps.scanning.Store(true)
		}
	}
	return ps
}

// appendTail keeps the stripped output for the session-id scan without allocating.
func (ps *paneState) appendTail(data []byte) {
	ps.tailMu.Lock()
	defer ps.tailMu.Unlock()
	if cap(ps.tail) == 0 {
		return
	}
	for len(data) > 0 {
		n := min(len(data), tailCap/2)
		if len(ps.tail)+n > cap(ps.tail) {
			keep := tailCap / 4
			copy(ps.tail, ps.tail[len(ps.tail)-keep:])
			ps.tail = ps.tail[:keep]
		}
		ps.tail = ps.plain.Write(ps.tail, data[:n])
		data = data[n:]
	}
}

// dialogID is d's id, "" for none.
func dialogID(d *nudge.Dialog) string {
	if d == nil {
		return ""
	}
	return d.DialogID
}

// markBusy sets BUSY at the first output after a verdict, unless that verdict is a
// dialog: an agent that waits for its operator still draws (Codex blinks its title every
// second, a CLI may tick a timer above its dialog), and each such redraw read as BUSY
// would flip the published readiness, with an event and a notification, while the dialog
// stands still. It reports whether it kept a dialog's verdict; only a capture then ends
// it (the quiet one, or paneLoop.dialogCheck while output keeps flowing).
func (m *Monitor) markBusy(ps *paneState) (dialog bool) {
	ps.mu.Lock()
	if ps.dialog {
		ps.mu.Unlock()
		return true
	}
	if ps.class.State == nudge.Busy {
		ps.mu.Unlock()
		return false
	}
	ps.class = Classification{State: nudge.Busy, Summary: outputSummary} // kept until a capture
	c := ps.class
	ps.mu.Unlock()
	m.report.publish(ps, c)
	return false
}

// dialogGone ends a dialog's verdict that captures taken while output flowed showed
// gone: the pane reads BUSY (output) until its quiet capture.
func (m *Monitor) dialogGone(ps *paneState) {
	ps.mu.Lock()
	if !ps.dialog {
		ps.mu.Unlock()
		return // a capture decided meanwhile
	}
	ps.dialog = false
	ps.class = Classification{State: nudge.Busy, Summary: outputSummary}
	c := ps.class
	ps.mu.Unlock()
	m.report.publish(ps, c)
}

// dialogRedrawn takes a capture, taken while output flowed over a dialog's verdict, that
// still shows a dialog: when it reads as another dialog than the verdict's (one drawn in
// pieces, or the next one asked), the verdict takes it and is published, so the dialog
// reported (and answered by policy) is the one on screen, not a first partial drawing.
func (m *Monitor) dialogRedrawn(ps *paneState, pack *Pack, screen string) {
	d := ParseDialog(pack, screen)
	if d == nil {
		return
	}
	ps.mu.Lock()
	if !ps.dialog || dialogID(ps.class.Dialog) == d.DialogID {
		ps.mu.Unlock()
		return
	}
	d.ShownAt = m.cfg.Now()
	ps.class.Dialog = d
	c := ps.class
	ps.mu.Unlock()
	m.report.publish(ps, c)
}

// classifyNow takes one capture and applies the verdict, unless output arrived meanwhile.
// It fails only when the capture failed (the caller retries).
func (m *Monitor) classifyNow(ps *paneState) error {
	rt, ok := m.cfg.Registry.Get(ps.id)
	if !ok {
		return nil
	}
	seq := ps.outSeq.Load()
	ctx, cancel := context.WithTimeout(ps.ctx, m.cfg.CaptureTimeout)
	defer cancel()
	sc, err := m.capture(ctx, rt)
	if err != nil {
		m.cfg.Logger.Debug("readiness capture failed", "runtime", ps.id, "error", err)
		return err
	}
	m.scanSessionID(ps, rt, sc.text)
	snap := ps.snapshotOf(sc.text, m.cfg.Now())
	nudge.Publish(m.cfg.Bus, Captured{RuntimeID: ps.id, Snapshot: snap})
	pack := m.packFor(rt)
	if pack == nil {
		return nil
	}
	rules := ClassifyScreen(pack, Screen{Text: sc.text, CursorY: sc.cursorY})
	c, ask := m.llmVerdict(ps, sc.text, rules)
	if ps.outSeq.Load() != seq {
		return nil // stale: the quiet timer is armed again
	}
	if c.State == nudge.NeedsConfirmation {
		c.Dialog = ps.readDialog(pack, sc.text, m.cfg.Now)
	}
	c, changed, dequeued := ps.record(&m.cfg, pack, c, seq, sc)
	if changed {
		m.report.publish(ps, c)
	}
	if dequeued {
		nudge.Publish(m.cfg.Bus, nudge.QueueEmptied{RuntimeID: ps.id, At: m.cfg.Now()})
	}
	m.report.syncBusy(ps)
	if ask {
		m.asker.ask(ps, pack, sc.text, seq, rules.State)
	}
	return nil
}

// readDialog reads the dialog on a NEEDS_CONFIRMATION screen (nil if the pack reads
// none); the dialog of the last verdict, still shown, keeps its ShownAt. Called on the
// pane's goroutine.
func (ps *paneState) readDialog(pack *Pack, screen string, now func() time.Time) *nudge.Dialog {
	d := ParseDialog(pack, screen)
	if d == nil {
		return nil
	}
	if prev := ps.class.Dialog; prev != nil && prev.DialogID == d.DialogID {
		return prev // the same dialog: shown since then
	}
	d.ShownAt = now()
	return d
}

// record makes c, the verdict on capture sc taken at output count seq, the pane's: the
// intake applied (intakeView), the input line read (readInput), copy mode and the check
// for a draft after human keys updated. It returns the verdict as recorded, whether it
// changed what is published and whether the agent's input queue has just emptied.
func (ps *paneState) record(cfg *MonitorConfig, pack *Pack, c Classification, seq uint64, sc screenCapture) (
	_ Classification, changed, dequeued bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	c = ps.intakeView(c, seq, sc.text, cfg.Now())
	changed = c.State != ps.class.State || c.Summary != ps.class.Summary || dialogID(c.Dialog) != dialogID(ps.class.Dialog)
	ps.class = c
	ps.dialog = c.State == nudge.NeedsConfirmation
	dequeued = ps.readInput(pack, c)
	ps.inMode = sc.inMode
	if ps.checking && !cfg.Now().Before(ps.lastKey.Add(cfg.QuietWindow)) {
		ps.checking = false
	}
	return c, changed, dequeued
}

// readInput sets the pane's draft (a human's text only), input line and queued flag from
// a verdict, and reports whether the agent's input queue has just emptied. Called with
// ps.mu held.
func (ps *paneState) readInput(pack *Pack, c Classification) (dequeued bool) {
	dequeued = ps.queued && !c.Queued && c.Composer
	if c.Composer { // a screen without the composer says nothing about the queue
		ps.queued = c.Queued
	}
	switch {
	case !c.Composer:
		ps.draft = ""
		ps.input = nudge.InputUnknown
	case c.Draft == "":
		ps.draft = ""
		ps.input = nudge.InputEmpty
	case ps.ours(pack, c.Draft):
		ps.draft = ""
		ps.input = nudge.InputOurs
	default:
		ps.draft = c.Draft
		ps.input = nudge.InputDraft
	}
	return dequeued
}

// humanKey records a human key on the pane at once (the gates see it before anything is
// persisted) and wakes the runtime's goroutine to persist operator_busy.
func (ps *paneState) humanKey(at time.Time) {
	ps.mu.Lock()
	if at.After(ps.lastKey) {
		ps.lastKey = at
	}
	ps.checking = true
	ps.humanSeen = true
	ps.mu.Unlock()
	signal(ps.keyCh)
}

// refreshMode reads #{pane_in_mode} after a %pane-mode-changed.
func (m *Monitor) refreshMode(ps *paneState) {
	rt, ok := m.cfg.Registry.Get(ps.id)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ps.ctx, m.cfg.CaptureTimeout)
	defer cancel()
	conn, err := m.cfg.Registry.Conn(rt.WorkspaceID)
	if err != nil {
		return
	}
	target, err := controlmode.Quote(rt.PaneID)
	if err != nil {
		return
	}
	rep, err := conn.Do(ctx, "display-message -p -t "+target+" '#{pane_in_mode}'")
	if err != nil || len(rep.Lines) == 0 {
		return
	}
	ps.mu.Lock()
	ps.inMode = strings.TrimSpace(rep.Lines[0]) == "1"
	ps.mu.Unlock()
	m.report.syncBusy(ps)
}

// screenCapture is one capture of a pane with its cursor row and mode.
type screenCapture struct {
	text    string
	cursorY int
	inMode  bool
}

// capture runs display-message (cursor row, mode) and capture-pane -p -e in one pipelined
// write over the workspace's control connection.
func (m *Monitor) capture(ctx context.Context, rt nudge.Runtime) (screenCapture, error) {
	conn, err := m.cfg.Registry.Conn(rt.WorkspaceID)
	if err != nil {
		return screenCapture{}, err
	}
	if rt.PaneID == "" {
		return screenCapture{}, fmt.Errorf("capture %s: no pane id", rt.RuntimeID)
	}
	target, err := controlmode.Quote(rt.PaneID)
	if err != nil {
		return screenCapture{}, err
	}
	reps, err := conn.DoAll(ctx,
		"display-message -p -t "+target+" '#{cursor_y} #{pane_in_mode}'",
		"capture-pane -p -e -t "+target)
	if err != nil {
		return screenCapture{}, fmt.Errorf("capture %s: %w", rt.PaneID, err)
	}
	sc := screenCapture{cursorY: -1, text: strings.Join(reps[1].Lines, "\n")}
	if len(reps[0].Lines) > 0 {
		f := strings.Fields(reps[0].Lines[0])
		if len(f) == 2 {
			if y, err := strconv.Atoi(f[0]); err == nil {
				sc.cursorY = y
			}
			sc.inMode = f[1] == "1"
		}
	}
	return sc, nil
}

func (m *Monitor) profile(rt nudge.Runtime) (panes.Profile, bool) {
	return m.cfg.Registry.Profile(rt.Agent)
}

// packFor returns the runtime's pack: the profile's Pack, else the agent's name.
func (m *Monitor) packFor(rt nudge.Runtime) *Pack {
	name := rt.Agent
	if p, ok := m.profile(rt); ok && p.Pack != "" {
		name = p.Pack
	}
	return m.cfg.Packs[name]
}

// scanSessionID looks for the profile's session id in the kept output tail and the
// capture while none is known, and stores the first one found. A profile whose agent
// keeps a record is not scanned: the screen is the agent's to draw (it could print
// another workspace's session id), and the record gives the id once a prompt of the
// runtime's own shows it is the runtime's (ack.Records).
func (m *Monitor) scanSessionID(ps *paneState, rt nudge.Runtime, screen string) {
	if !ps.scanning.Load() {
		return
	}
	p, ok := m.profile(rt)
	if !ok || rt.SessionID != "" || p.Record != "" {
		ps.scanning.Store(false)
		return
	}
	ps.tailMu.Lock()
	tail := string(ps.tail)
	ps.tailMu.Unlock()
	id := p.FindSessionID([]byte(tail))
	if id == "" {
		var pl nudge.Plain
		id = p.FindSessionID(pl.Write(nil, []byte(screen)))
	}
	if id == "" {
		return
	}
	ps.scanning.Store(false)
	ps.tailMu.Lock()
	ps.tail = nil
	ps.tailMu.Unlock()
	if _, err := m.cfg.Registry.Update(ps.id, func(r *nudge.Runtime) {
		if r.SessionID == "" {
			r.SessionID = id
		}
	}); err != nil {
		m.cfg.Logger.Debug("persist session id failed", "runtime", ps.id, "error", err)
	}
}
