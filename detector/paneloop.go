package detector

import "time"

// paneLoop is one runtime's goroutine (run) and the timers only it touches: the quiet
// timer that takes a capture once output stops, the key timer that ends a human's quiet
// window, the rate-limited fallback check for a human (confirmHuman) and the end of an
// intake window (intakeChanged). Monitor.sync starts it when the runtime appears; the
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
}

func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

func (l *paneLoop) stop() {
	l.confirm.Stop()
	l.intakeEnd.Stop()
	l.quiet.Stop()
	l.keys.Stop()
}

// output runs when Feed woke the goroutine: the first output after a verdict (or a
// %pause), or output nudge did not cause. Later output only moves lastOut and pushes
// the quiet timer back (Feed): the goroutine sleeps while the pane redraws.
func (l *paneLoop) output() {
	ps := l.ps
	l.m.markBusy(ps)
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
