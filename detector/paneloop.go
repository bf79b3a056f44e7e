package detector

import (
	"context"
	"time"

	"github.com/nudgehq/nudge"
)

// paneLoop is one runtime's goroutine (run) and the timers only it touches: the quiet
// timer that takes a capture once output stops, the key timer that ends a human's quiet
// window, the rate-limited fallback check for a human (confirmHuman), the end of an
// intake window (intakeChanged) and the look at a dialog while output flows
// (dialogCheck). Monitor.sync starts it when the runtime appears; the
// pane's context, cancelled when the runtime goes or by Close, ends it. Feed, Event and
// the gates reach it only through the pane's channels.
type paneLoop struct {
	m  *Monitor
	ps *paneState

	readyQuiet   time.Duration // paneState.readyQuiet
	quiet        *time.Timer   // paneState.quiet: output has stopped for readyQuiet: capture
	keys         *time.Timer   // the human's quiet window may be over
	confirm      *time.Timer   // a rate-limited fallback query, run later
	confirmArmed bool          // confirm is set
	intakeEnd    *time.Timer   // the intake window of nudge's last prompt ends
	recheck      *time.Timer   // output has flowed for dialogRecheck over a dialog's verdict
	recheckArmed bool          // recheck is set
	dialogMisses int           // captures in a row, taken while output flowed, without the dialog
}

// run is the runtime's goroutine: output marks BUSY and (re)arms the quiet timer; the
// quiet timer takes one capture; the key timer ends the human's quiet window.
func (l *paneLoop) run() {
	defer l.m.wg.Done()
	l.start()
	defer l.stop()
	ps := l.ps
	for {
		select {
		case <-ps.ctx.Done():
			return
		case <-ps.outCh:
			l.output()
		case <-l.confirm.C:
			l.confirmArmed = false
			ps.maybeHuman.Store(false)
			l.confirmHuman()
		case <-ps.keyCh:
			l.m.report.syncBusy(ps)
			l.keys.Reset(l.m.cfg.QuietWindow)
		case <-ps.modeCh:
			l.m.refreshMode(ps)
		case <-ps.intakeCh:
			l.intakeChanged()
		case <-l.intakeEnd.C:
			l.intakeChanged()
		case <-l.quiet.C:
			l.quietOver()
		case <-l.keys.C:
			l.keysOver()
		case <-l.recheck.C:
			l.recheckArmed = false
			l.dialogCheck()
		}
	}
}

// start takes the pane's quiet timer and ReadyQuiet (newPane looked it up once: a
// runtime's profile does not change) and sets the other timers, stopped.
func (l *paneLoop) start() {
	l.readyQuiet = l.ps.readyQuiet
	l.quiet = l.ps.quiet
	l.keys = stoppedTimer()
	l.confirm = stoppedTimer()
	l.intakeEnd = stoppedTimer()
	l.recheck = stoppedTimer()
}

func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

func (l *paneLoop) stop() {
	l.confirm.Stop()
	l.intakeEnd.Stop()
	l.recheck.Stop()
	l.quiet.Stop()
	l.keys.Stop()
}

// output runs when Feed woke the goroutine: the first output after a verdict (or a
// %pause), or output nudge did not cause. Later output only moves lastOut and pushes
// the quiet timer back (Feed): the goroutine sleeps while the pane redraws. Output over
// a dialog's verdict keeps it, and sets the dialog check in case output never stops.
func (l *paneLoop) output() {
	ps := l.ps
	if l.m.markBusy(ps) && !l.recheckArmed {
		l.dialogMisses = 0
		l.recheck.Reset(dialogRecheck)
		l.recheckArmed = true
	}
	l.quiet.Reset(l.readyQuiet)
	if !l.confirmArmed && ps.maybeHuman.Swap(false) {
		if wait := l.confirmHuman(); wait > 0 {
			// Rate-limited: check later. maybeHuman stays set until then, so further
			// output does not wake this goroutine.
			ps.maybeHuman.Store(true)
			l.confirm.Reset(wait)
			l.confirmArmed = true
		}
	}
}

// quietOver runs when the quiet timer fires: a capture if the pane has been quiet for
// readyQuiet, else the timer set for the rest of it.
func (l *paneLoop) quietOver() {
	ps := l.ps
	ps.quietFires.Add(1)
	// Arm first, then look at lastOut: output after this point wakes the goroutine
	// (Feed sees armed), output before it is seen here.
	ps.armed.Store(true)
	if idle := l.idle(); idle < l.readyQuiet {
		if ps.armed.CompareAndSwap(true, false) {
			l.quiet.Reset(l.readyQuiet - idle) // still streaming
		} // else Feed has signalled outCh: that wake re-arms the timer
		return
	}
	if l.m.classifyNow(ps) != nil {
		l.quiet.Reset(time.Second) // retry a failed capture; no verdict is worse
	}
}

// keysOver runs when the key timer fires: once the human's keys have been quiet for the
// quiet window, a capture looks for a draft before the pane is released, unless output
// is still flowing (its quiet capture will do it).
func (l *paneLoop) keysOver() {
	ps, cfg := l.ps, &l.m.cfg
	ps.mu.Lock()
	left := ps.lastKey.Add(cfg.QuietWindow).Sub(cfg.Now())
	ps.mu.Unlock()
	if left > 0 {
		l.keys.Reset(left)
		return
	}
	if l.idle() >= l.readyQuiet && l.m.classifyNow(ps) != nil {
		l.quiet.Reset(time.Second)
	}
}

// idle is how long the pane has shown no output.
func (l *paneLoop) idle() time.Duration {
	return time.Duration(l.m.cfg.Now().UnixNano() - l.ps.lastOut.Load())
}

// dialogRecheck is how long output may flow over a dialog's verdict before a capture
// looks whether the dialog is still there; dialogMissLimit captures in a row without it,
// each dialogRecheck apart, end the verdict. A pane that goes quiet is looked at by its
// quiet capture first, which decides alone (the screen is whole then).
const (
	dialogRecheck   = time.Second
	dialogMissLimit = 2
)

// dialogCheck runs when output has flowed for dialogRecheck over a dialog's verdict. If
// the pane is still drawing, a capture taken now (output or not: an agent at work after
// its operator answered may never pause for readyQuiet) looks for the dialog: shown, the
// verdict stands; missing dialogMissLimit times in a row (one capture may catch the dialog
// half redrawn), the dialog is gone and the pane reads BUSY until its quiet capture.
func (l *paneLoop) dialogCheck() {
	m, ps := l.m, l.ps
	ps.mu.Lock()
	held := ps.dialog
	ps.mu.Unlock()
	if !held || l.idle() >= l.readyQuiet {
		return // a capture decided, or the quiet one is due
	}
	rt, ok := m.cfg.Registry.Get(ps.id)
	pack := m.packFor(rt)
	if !ok || pack == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ps.ctx, m.cfg.CaptureTimeout)
	sc, err := m.capture(ctx, rt)
	cancel()
	switch {
	case err != nil:
		m.cfg.Logger.Debug("dialog capture failed", "runtime", ps.id, "error", err)
	case ClassifyScreen(pack, Screen{Text: sc.text, CursorY: sc.cursorY}).State == nudge.NeedsConfirmation:
		l.dialogMisses = 0
		m.dialogRedrawn(ps, pack, sc.text)
	default:
		if l.dialogMisses++; l.dialogMisses >= dialogMissLimit {
			l.dialogMisses = 0
			m.dialogGone(ps)
			return
		}
	}
	l.recheck.Reset(dialogRecheck)
	l.recheckArmed = true
}
