package panes

import (
	"fmt"

	"github.com/nudgehq/nudge"
)

// The runtime state machine: seed 001 §9 plus the edges a running daemon needs.
//
// Seed edges: starting→ready|failed, ready→triggering|offline, triggering→awaiting_ack|failed,
// awaiting_ack→ready|retrying|fallback_resume, retrying→awaiting_ack|failed,
// fallback_resume→ready|spawn_recovery, spawn_recovery→starting|failed,
// offline→starting|failed, failed→starting|deregistered.
//
// Added, and why:
//   - every live state → offline: the pane can die or vanish at any moment.
//   - every live state → exited: the program ended cleanly (status 0 or its profile's
//     completion marker); exited → starting: `nudge restart` (or a profile that opts into
//     restart-on-exit).
//   - every state but deregistered → deregistered: an operator may drop any runtime.
//   - starting|ready|triggering|awaiting_ack|retrying ↔ paused: `nudge pause|resume`;
//     paused → ready|starting|offline|failed.
//   - triggering → ready: the trigger was deferred or refused before any key was typed.
//   - retrying → ready: the ack arrived while a retry was pending;
//     retrying → fallback_resume: retries exhausted.
//   - ready|triggering|awaiting_ack|retrying|paused|offline|failed|exited → fallback_resume
//     and → spawn_recovery (also from starting): the fallback chain can start from any
//     point, including a pane that cannot take input (defer timeout, crash loop shortcut).
//     fallback_resume stays while the resume run is in the pane; its end brings the
//     runtime's own program back (→ offline → starting).
//   - fallback_resume → starting|failed: a resume is launched in the pane, or cannot be.
//   - offline|failed → ready: after a nudge restart a pane thought dead is found alive
//     and re-adopted.
//   - ready → starting: a manual restart.
//   - awaiting_ack|retrying → triggering: an agent that queues input gets the next
//     trigger typed while an earlier one still waits for its ack.
var transitions = map[nudge.Status][]nudge.Status{
	nudge.StatusStarting:       {nudge.StatusReady, nudge.StatusFailed, nudge.StatusPaused, nudge.StatusSpawnRecovery},
	nudge.StatusReady:          {nudge.StatusTriggering, nudge.StatusPaused, nudge.StatusFallbackResume, nudge.StatusSpawnRecovery, nudge.StatusStarting, nudge.StatusFailed},
	nudge.StatusTriggering:     {nudge.StatusAwaitingAck, nudge.StatusFailed, nudge.StatusReady, nudge.StatusPaused, nudge.StatusFallbackResume, nudge.StatusSpawnRecovery},
	nudge.StatusAwaitingAck:    {nudge.StatusReady, nudge.StatusRetrying, nudge.StatusFallbackResume, nudge.StatusSpawnRecovery, nudge.StatusFailed, nudge.StatusPaused, nudge.StatusTriggering},
	nudge.StatusRetrying:       {nudge.StatusAwaitingAck, nudge.StatusFailed, nudge.StatusReady, nudge.StatusFallbackResume, nudge.StatusSpawnRecovery, nudge.StatusPaused, nudge.StatusTriggering},
	nudge.StatusFallbackResume: {nudge.StatusReady, nudge.StatusSpawnRecovery, nudge.StatusStarting, nudge.StatusFailed},
	nudge.StatusSpawnRecovery:  {nudge.StatusStarting, nudge.StatusFailed},
	nudge.StatusOffline:        {nudge.StatusStarting, nudge.StatusFailed, nudge.StatusReady, nudge.StatusFallbackResume, nudge.StatusSpawnRecovery},
	nudge.StatusFailed:         {nudge.StatusStarting, nudge.StatusReady, nudge.StatusFallbackResume, nudge.StatusSpawnRecovery},
	nudge.StatusPaused:         {nudge.StatusReady, nudge.StatusStarting, nudge.StatusFailed, nudge.StatusFallbackResume, nudge.StatusSpawnRecovery},
	nudge.StatusExited:         {nudge.StatusStarting, nudge.StatusFallbackResume, nudge.StatusSpawnRecovery},
	nudge.StatusDeregistered:   nil,
}

// Live reports whether s is a state in which the runtime's pane is believed to exist.
func Live(s nudge.Status) bool {
	switch s {
	case nudge.StatusOffline, nudge.StatusDeregistered, nudge.StatusFailed, nudge.StatusExited:
		return false
	}
	_, known := transitions[s]
	return known
}

// CanTransition reports whether a runtime may move from one status to another. A status
// never transitions to itself.
func CanTransition(from, to nudge.Status) bool {
	next, ok := transitions[from]
	if !ok || from == to || from == nudge.StatusDeregistered {
		return false
	}
	if _, known := transitions[to]; !known {
		return false
	}
	if to == nudge.StatusDeregistered || ((to == nudge.StatusOffline || to == nudge.StatusExited) && Live(from)) {
		return true
	}
	for _, s := range next {
		if s == to {
			return true
		}
	}
	return false
}

// TransitionError is returned for an illegal transition; nothing is changed.
type TransitionError struct {
	From, To nudge.Status
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("illegal runtime transition %s -> %s", e.From, e.To)
}

func checkTransition(from, to nudge.Status) error {
	if CanTransition(from, to) {
		return nil
	}
	return &TransitionError{From: from, To: to}
}
