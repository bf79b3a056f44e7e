package detector

import (
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/panes"
)

// intake is the prompt nudge last submitted into a pane while its agent has not shown yet
// that it took it. A TUI may take a prompt out of its composer at Enter and then draw
// nothing while it reads it: Gemini CLI, given a 63 KiB paste, shows an empty composer
// and no busy sign for seconds (tens of seconds on a loaded machine), and its screen
// reads READY all that time. A trigger typed then is queued behind the paste, not given
// to an idle agent. So until the agent shows it took the prompt (its busy sign, the
// prompt in its transcript, a dialog or an error; or the trigger is acked) or its
// profile's intake window passes, the pane does not count as READY.
//
// What else shows it depends on the TUI. For most, anything drawn after the prompt left
// the composer is the turn's (an answer, its transcript). A TUI whose pack says
// IntakeNeedsTurn (Gemini CLI) may draw something at Enter and start the turn seconds
// later: under load it redraws, reads READY, shows the prompt queued, even writes its
// user line to its record, and reaches its model only seconds after that. For it only a
// sign of the turn ends the intake: its busy sign (not the line of its own queue), a
// dialog or an error, the prompt in its transcript (not while its queue is shown, which
// holds the prompt too), the turn's end in its record or
// another ack (Settled). While its composer holds input again (the prompt back in it: not
// taken), the screen's READY stands (shown), so that the ack wait can repair the Enter;
// the next trigger still waits.
type intake struct {
	trigger string    // the trigger whose prompt it is ("" none)
	seq     uint64    // the pane's output count when the prompt left the composer
	until   time.Time // the end of the intake window
	held    bool      // the verdict last published is BUSY because of it: a real one must follow
	strict  bool      // the pack's IntakeNeedsTurn: drawing alone is no sign of the turn
}

// drawn reports whether output count seq shows that the agent drew since the prompt left
// its composer, for an intake that drawing ends (not a strict one).
func (in *intake) drawn(seq uint64) bool {
	return !in.strict && seq != in.seq
}

// pending reports whether the intake is still waited for at now.
func (in *intake) pending(now time.Time) bool {
	return in.trigger != "" && now.Before(in.until)
}

// shown reports whether a strict intake lets c, a READY verdict, stand: its composer holds
// input (the prompt back in it, not taken into a turn, or a person's text), which the
// gates that read drafts and the ack wait (a repair Enter) must see as it is. The intake
// still waits for a sign of the turn.
func (in *intake) shown(c Classification) bool {
	return in.strict && c.Draft != ""
}

// end forgets the intake (held stays: the published verdict still needs replacing).
func (in *intake) end() { *in = intake{held: in.held} }

// Submitted records that the prompt of trigger triggerID, typed by nudge, has just left
// the runtime's composer. Until the agent shows that it took it (see intake), Readiness
// reports BUSY and Intaking reports the trigger. It is called once per submitted prompt,
// after the composer was seen empty: output from then on is the agent's own drawing.
func (m *Monitor) Submitted(runtimeID, triggerID string) {
	ps := m.get(runtimeID)
	if ps == nil {
		return
	}
	rt, ok := m.cfg.Registry.Get(runtimeID)
	pack := m.packFor(rt)
	if !ok || pack == nil {
		return // no pack reads its screen: its readiness says nothing either way
	}
	window := panes.DefaultIntakeTimeout
	if p, ok := m.profile(rt); ok {
		window = p.Intake()
	}
	now := m.cfg.Now()
	ps.mu.Lock()
	ps.intake = intake{trigger: triggerID, seq: ps.outSeq.Load(), until: now.Add(window), held: ps.intake.held,
		strict: pack.IntakeNeedsTurn}
	ps.mu.Unlock()
	signal(ps.intakeCh)
}

// Settled ends the wait for trigger triggerID's intake, if it is the one waited for: the
// trigger is closed (acked: the agent took it; failed or fallen back: there is nothing
// more to wait for in this pane), or the turn that took it ended in the agent's record.
func (m *Monitor) Settled(runtimeID, triggerID string) {
	ps := m.get(runtimeID)
	if ps == nil {
		return
	}
	ps.mu.Lock()
	hit := triggerID != "" && ps.intake.trigger == triggerID
	if hit {
		ps.intake.end()
	}
	ps.mu.Unlock()
	if hit {
		signal(ps.intakeCh)
	}
}

// outputSummary is the summary of the BUSY a pane reads while output flows, before a
// capture has looked at its screen.
const outputSummary = "output"

// Working reports whether the runtime's screen, as last captured and with no output
// since, shows the agent at work (its busy sign): BUSY read from the screen, not only
// from output flowing, nor from an intake.
func (m *Monitor) Working(rt nudge.Runtime) bool {
	ps := m.get(rt.RuntimeID)
	if ps == nil {
		return false
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.class.State == nudge.Busy && ps.class.Summary != outputSummary && !ps.intake.held
}

// Intaking reports the trigger whose prompt the runtime's agent took out of its composer
// and has not yet shown that it took (nothing drawn since, or for a strict intake no sign
// of its turn; no ack, within its profile's intake window), and when that window ends.
func (m *Monitor) Intaking(rt nudge.Runtime) (triggerID string, until time.Time, ok bool) {
	ps := m.get(rt.RuntimeID)
	if ps == nil {
		return "", time.Time{}, false
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	in := ps.intake
	if !in.pending(m.cfg.Now()) || in.drawn(ps.outSeq.Load()) {
		return "", time.Time{}, false // over, or the pane drew since: the quiet capture ends it
	}
	return in.trigger, in.until, true
}

// intakeView applies the pane's intake to c, a verdict on screen, captured when the pane's
// output count was seq, and ends the intake once the screen shows the prompt taken (for a
// strict intake, a sign of its turn). While it is pending, a READY screen is reported
// BUSY. Called with ps.mu held.
func (ps *paneState) intakeView(c Classification, seq uint64, screen string, now time.Time) Classification {
	in := &ps.intake
	if in.trigger != "" {
		switch {
		case in.drawn(seq): // the agent drew since the prompt left its composer
		case c.State == nudge.Busy && !(in.strict && c.Queued), c.State == nudge.NeedsConfirmation, c.State == nudge.ErrorState:
		case !(in.strict && c.Queued) && echoed(screen, c.Draft, in.trigger): // the prompt in its transcript (not its queue)
		case !now.Before(in.until): // the window passed
		case c.State == nudge.Ready && in.shown(c):
			in.held = false
			return c
		case c.State == nudge.Ready:
			in.held = true
			c.State, c.Confident = nudge.Busy, true
			c.Summary = "taking in the prompt of trigger " + in.trigger + ": " + in.waitingFor()
			return c
		default: // not understood: say so, and wait on
			return c
		}
		in.end()
	}
	in.held = false
	return c
}

// waitingFor says what a pending intake waits for, for the summary of the BUSY it reads.
func (in *intake) waitingFor() string {
	if in.strict {
		return "no sign of its turn since it left the composer"
	}
	return "nothing drawn since it left the composer"
}

// echoed reports whether the screen shows the envelope of trigger id outside the composer
// (whose text is draft): the agent put the prompt into its transcript.
func echoed(screen, draft, id string) bool {
	needle := "id=" + id
	return hasID(screen, needle) && !hasID(draft, needle)
}

// hasID reports whether s holds needle ("id=X") followed by a byte that cannot be part of
// an id, or the end.
func hasID(s, needle string) bool {
	for {
		i := strings.Index(s, needle)
		if i < 0 {
			return false
		}
		s = s[i+len(needle):]
		if s == "" || !nudge.IsIDByte(s[0]) {
			return true
		}
	}
}

// intakeChanged runs on the pane's goroutine when an intake began or ended, or its window
// is over: it sets the window's timer and, unless output flows (the quiet capture then
// follows), takes a capture so that the published readiness says it (BUSY while the
// agent takes the prompt in, its real state once that is over). The capture also sees
// what the agent drew before the prompt was known to have left the composer: its busy
// sign, the prompt in its transcript (the intake is then over at once).
func (l *paneLoop) intakeChanged() {
	m, ps, end := l.m, l.ps, l.intakeEnd
	now := m.cfg.Now()
	ps.mu.Lock()
	in := ps.intake
	ps.mu.Unlock()
	end.Stop()
	if in.trigger != "" && now.Before(in.until) {
		end.Reset(in.until.Sub(now))
	}
	if !in.held && in.trigger == "" {
		return
	}
	if time.Duration(now.UnixNano()-ps.lastOut.Load()) < l.readyQuiet {
		return
	}
	if err := m.classifyNow(ps); err != nil {
		m.cfg.Logger.Debug("intake capture failed", "runtime", ps.id, "error", err)
		end.Reset(time.Second) // look again: no verdict is worse
	}
}
