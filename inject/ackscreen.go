package inject

import (
	"context"
	"strconv"
	"time"

	"github.com/nudgehq/nudge"
)

// An ack on screen is never missed. A TUI that redraws by diff (Ink, ratatui) need not
// write ACK_TRIGGER:<id> as one contiguous run of output: it may write the marker in
// pieces, out of order, with cursor moves between them, so the stream matcher sees no
// marker while the screen shows one. Before any retry or fallback, and while the pane
// draws during the ack wait, the pane's screen and scrollback are read (one capture
// through the control connection, no fork) and searched for the marker.

// screenPoll is how often, while a trigger waits for its ack and its pane draws, the
// screen is searched for the marker.
const screenPoll = 2 * time.Second

// ackScrollback is how many lines of scrollback the search reads above the screen.
const ackScrollback = 1000

// markerOnScreen reports whether t's ack marker is on its runtime's screen or in the
// scrollback. With seen non-nil, it looks only if the pane drew since the last look.
func (f *finisher) markerOnScreen(t nudge.Trigger, seen *uint64) bool {
	if f.deps.Acks == nil || t.RuntimeID == "" {
		return false
	}
	if seen != nil {
		l := f.lanes.get(t.RuntimeID)
		if l == nil {
			return false
		}
		if n := l.outSeq.Load(); n == *seen {
			return false
		} else {
			*seen = n
		}
	}
	rt, ok := f.deps.Runtimes.Get(t.RuntimeID)
	if !ok {
		return false
	}
	conn, err := f.deps.Conn(rt.WorkspaceID)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(f.ctx, 2*time.Second)
	defer cancel()
	r, err := conn.Do(ctx, "capture-pane -p -J -S -"+strconv.Itoa(ackScrollback)+" -t "+quote(paneTarget(rt)))
	if err != nil || r == nil {
		return false
	}
	return f.deps.Acks.OnScreen(rt.RuntimeID, Field(t.TriggerID), r.Lines)
}

// ackedMeanwhile reports whether a trigger about to be typed again (a retry) was acked
// since its last ack wait ended: by a signal the tracker saw during the backoff, or by
// the marker on screen. It returns the signal.
func (f *finisher) ackedMeanwhile(j *job) (string, bool) {
	if f.deps.Acks == nil {
		return "", false
	}
	t := j.record()
	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	if sig, err := f.deps.Acks.Wait(ctx, t.TriggerID); err == nil {
		return sig, true
	}
	if f.markerOnScreen(t, nil) {
		return signalScreen, true
	}
	return "", false
}

// ackedNow reports whether the Acker acked j already (without waiting), and how.
func (f *finisher) ackedNow(j *job) (string, bool) {
	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	sig, err := f.deps.Acks.Wait(ctx, j.id())
	return sig, err == nil
}

// signalScreen is the ack signal of a marker found on the screen (ack.SignalMarker: the
// same marker, read from the screen instead of the stream).
const signalScreen = "marker"

// hander is an Acker told when a trigger's prompt is handed to its runtime
// (ack.Tracker.Handed): what the runtime writes acks it only from then on.
type hander interface {
	Handed(runtimeID, triggerID string)
}

// handed tells the Acker that j is being typed or handed to rt now, before it is: the
// agent's record may show the prompt before the typing returns. A marker or a record line
// naming j from before (the agent's own writing, while j was queued) acks nothing.
func (ty *typist) handed(j *job, rt nudge.Runtime) {
	if h, ok := ty.deps.Acks.(hander); ok {
		h.Handed(rt.RuntimeID, j.id())
	}
}
