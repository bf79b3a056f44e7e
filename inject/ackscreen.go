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
func (p *Pipeline) markerOnScreen(t nudge.Trigger, seen *uint64) bool {
	if p.deps.Acks == nil || t.RuntimeID == "" {
		return false
	}
	if seen != nil {
		l := p.lane(t.RuntimeID)
		if l == nil {
			return false
		}
		if n := l.outSeq.Load(); n == *seen {
			return false
		} else {
			*seen = n
		}
	}
	rt, ok := p.deps.Runtimes.Get(t.RuntimeID)
	if !ok {
		return false
	}
	conn, err := p.deps.Conn(rt.WorkspaceID)
	if err != nil {
		return false
	}
	return markerOnScreen(p.ctx, p.deps.Acks, conn, rt, t.TriggerID)
}

// markerOnScreen captures rt's pane through s and reports whether it shows trigger id's
// ack marker.
func markerOnScreen(ctx context.Context, acks Acker, s Sender, rt nudge.Runtime, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	r, err := s.Do(ctx, "capture-pane -p -J -S -"+strconv.Itoa(ackScrollback)+" -t "+quote(paneTarget(rt)))
	if err != nil || r == nil {
		return false
	}
	return acks.OnScreen(rt.RuntimeID, Field(id), r.Lines)
}

// ackedMeanwhile reports whether a trigger about to be typed again (a retry) was acked
// since its last ack wait ended: by a signal the tracker saw during the backoff, or by
// the marker on screen. It returns the signal.
func ackedMeanwhile(ctx context.Context, acks Acker, s Sender, rt nudge.Runtime, id string) (string, bool) {
	if acks == nil {
		return "", false
	}
	if sig, ok := ackedNow(ctx, acks, id); ok {
		return sig, true
	}
	if rt.RuntimeID != "" && markerOnScreen(ctx, acks, s, rt, id) {
		return signalScreen, true
	}
	return "", false
}

// signalScreen is the ack signal of a marker found on the screen (ack.SignalMarker: the
// same marker, read from the screen instead of the stream).
const signalScreen = "marker"

// hander is an Acker told when a trigger's prompt is handed to its runtime
// (ack.Tracker.Handed): what the runtime writes acks it only from then on.
type hander interface {
	Handed(runtimeID, triggerID string)
}
