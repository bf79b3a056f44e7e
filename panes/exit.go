package panes

import (
	"bytes"
	"strings"
	"sync"

	"github.com/nudgehq/nudge"
)

// Done is not a crash (seed 003). When a runtime's program ends, the registry decides:
//
//	clean   exit status 0, or the profile's completion marker (DoneMarker, e.g.
//	        __TASK_DONE__) was seen on a line of its own: status exited, no restart (unless
//	        the profile sets RestartOnExit), not counted toward the crash loop.
//	crash   a non-zero status, a signal, or no status at all: status offline, counted,
//	        restarted after RestartDelay through the agent's interactive resume when its
//	        session id is known (else fresh); CrashLoopFailures crashes within
//	        CrashLoopWindow make it failed.
//	one-off a fallback resume run (RelaunchWith with the profile's resume command) that
//	        ends, however: offline, not counted, and the runtime's own program is started
//	        again in its place.
//
// An unknown end counts as a crash: a program that vanished without tmux knowing its exit
// status or signal (reconcile waits statusGrace for them) cannot be assumed to be done.

// exitKind classifies a program's end.
type exitKind int

const (
	exitCrash exitKind = iota
	exitClean
	exitOneOff
)

func (k exitKind) String() string {
	return [...]string{"crash", "clean", "one-off"}[k]
}

// classifyExitLocked decides what the end of rt's pane p means. The records' lock is held.
func (rc *reconciler) classifyExitLocked(rt *nudge.Runtime, paneID string, exit *int) exitKind {
	if rc.recs.oneOff[rt.RuntimeID] == paneID && paneID != "" {
		return exitOneOff
	}
	if exit != nil && *exit == 0 {
		return exitClean
	}
	if rc.recs.markers.seen(paneKey{serverOf(rt), paneNum(paneID)}) {
		return exitClean
	}
	return exitCrash
}

// markerScan finds a profile's completion marker in a pane's output: the marker alone on a
// line once ANSI sequences and surrounding blanks are stripped (so an `echo __TASK_DONE__`
// command line does not count, nor a sentence that mentions it). It keeps the current
// partial line of each pane, bounded.
type markerScan struct {
	mu    sync.Mutex
	panes map[paneKey]*markerPane
}

type markerPane struct {
	marker []byte
	line   []byte // the current line so far (at most maxMarkerLine bytes are kept)
	seen   bool
}

const maxMarkerLine = 256

// watch starts looking for marker in pane n's output ("" stops).
func (m *markerScan) watch(n paneKey, marker string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.panes == nil {
		m.panes = map[paneKey]*markerPane{}
	}
	if marker == "" || n.n < 0 {
		delete(m.panes, n)
		return
	}
	if p := m.panes[n]; p != nil && string(p.marker) == marker {
		return
	}
	m.panes[n] = &markerPane{marker: []byte(marker)}
}

// feed scans one chunk of pane n's output. It does not allocate once a pane's line buffer
// has grown.
func (m *markerScan) feed(n paneKey, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.panes[n]
	if p == nil || p.seen {
		return
	}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		chunk := data
		if i >= 0 {
			chunk = data[:i]
		}
		if room := maxMarkerLine - len(p.line); room > 0 {
			p.line = append(p.line, chunk[:min(len(chunk), room)]...)
		}
		if i < 0 {
			return
		}
		if bytes.Contains(p.line, p.marker) && isMarkerLine(p.line, p.marker) {
			p.seen = true
			return
		}
		p.line = p.line[:0]
		data = data[i+1:]
	}
}

func isMarkerLine(line, marker []byte) bool {
	s := strings.TrimSpace(nudge.StripANSI(string(line)))
	return s == string(marker)
}

// seen reports whether pane id's output held the marker.
func (m *markerScan) seen(n paneKey) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.panes[n]
	return p != nil && (p.seen || isMarkerLine(p.line, p.marker))
}

func (m *markerScan) forget(n paneKey) {
	m.mu.Lock()
	delete(m.panes, n)
	m.mu.Unlock()
}

// exitedLocked records a clean end: exited (or, for a profile that restarts on exit,
// offline and restarted without counting a crash). It reports whether to restart.
func (rc *reconciler) exitedLocked(rt *nudge.Runtime, exit *int) ([]change, bool) {
	why := "program exited cleanly"
	if exit == nil || *exit != 0 {
		why = "program printed its completion marker and ended"
	}
	rc.recs.markers.forget(keyOf(rt))
	if rc.cfg.Profiles[rt.Agent].RestartOnExit && rt.Managed && !rc.recs.stopped[rt.RuntimeID] {
		chs, err := rc.recs.transitionLocked(rt.RuntimeID, nudge.StatusOffline, why+" (profile restarts on exit)", "",
			func(n *nudge.Runtime) { n.ExitStatus = exit; n.Readiness = nudge.Unknown })
		rc.recs.logErr("reconcile", rt.RuntimeID, err)
		return chs, err == nil && rc.recs.restartableLocked(rc.recs.rts[rt.RuntimeID])
	}
	chs, err := rc.recs.transitionLocked(rt.RuntimeID, nudge.StatusExited, why, "",
		func(n *nudge.Runtime) { n.ExitStatus = exit; n.Readiness = nudge.Unknown })
	rc.recs.logErr("reconcile", rt.RuntimeID, err)
	if err == nil {
		rc.recs.auditLocked(rc.recs.rts[rt.RuntimeID], "runtime_exited", why, "", map[string]any{"exit_status": exit, "pane_id": rt.PaneID})
	}
	return chs, false
}
