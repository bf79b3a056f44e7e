package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
)

// stateWord is a runtime's state in one word: the lifecycle status when it says the agent
// cannot take prompts (PAUSED, FAILED, OFFLINE, EXITED, STARTING, ...), else the detector's readiness.
func stateWord(rt nudge.Runtime) string { return stateOf(rt.Status, rt.Readiness, rt.Paused) }

// stateOf is stateWord from the three fields it reads (for a record of package api).
func stateOf(status nudge.Status, readiness nudge.Readiness, paused bool) string {
	switch status {
	case nudge.StatusFailed, nudge.StatusOffline, nudge.StatusStarting, nudge.StatusDeregistered,
		nudge.StatusFallbackResume, nudge.StatusSpawnRecovery, nudge.StatusExited:
		return strings.ToUpper(string(status))
	}
	if paused || status == nudge.StatusPaused {
		return "PAUSED"
	}
	if readiness == "" {
		return string(nudge.Unknown)
	}
	return string(readiness)
}

// shortStatus is the one-line status for a tmux status bar: `[reviewer: READY] [executioner: BUSY]`.
// With qualify, roles are shown as ws/role (several workspaces on one line). A human at
// the keyboard is shown with a trailing `*`.
func shortStatus(rts []runtimeView, qualify bool) string {
	es := make([]statusEntry, 0, len(rts))
	for _, rt := range rts {
		es = append(es, statusEntry{rt.WorkspaceID, rt.Role, rt.Status, stateWord(rt.Runtime), rt.OperatorBusy, rt.QueueDepth})
	}
	return shortLine(es, qualify)
}

// statusEntry is what the status line shows of one runtime.
type statusEntry struct {
	workspace, role string
	status          nudge.Status
	state           string // stateWord
	busy            bool   // a human at the keyboard
	queue           int
}

// shortLine is shortStatus of entries, from whichever record they were read.
func shortLine(es []statusEntry, qualify bool) string {
	es = append([]statusEntry(nil), es...)
	sort.Slice(es, func(i, j int) bool {
		if es[i].workspace != es[j].workspace {
			return es[i].workspace < es[j].workspace
		}
		return es[i].role < es[j].role
	})
	var b strings.Builder
	for _, e := range es {
		if e.status == nudge.StatusDeregistered {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		name := e.role
		if qualify {
			name = e.workspace + "/" + e.role
		}
		b.WriteString("[" + name + ": " + e.state)
		if e.busy {
			b.WriteByte('*')
		}
		if e.queue > 0 {
			fmt.Fprintf(&b, " +%d", e.queue)
		}
		b.WriteByte(']')
	}
	return b.String()
}

// receiptWord summarises a trigger's receipt: state, result and error code.
func receiptWord(t *nudge.Trigger) string {
	if t == nil {
		return "-"
	}
	return receiptOf(t.State, t.Result, t.ErrorCode, t.Fallback)
}

// receiptOf is receiptWord from the fields it reads (for a record of package api).
func receiptOf(state nudge.TriggerState, result nudge.Result, code nudge.Code, fallback string) string {
	s := string(state)
	if result != "" && string(result) != string(state) {
		s += "/" + string(result)
	}
	if code != "" {
		s += " " + string(code)
	}
	if fallback != "" {
		s += " (" + fallback + ")"
	}
	return s
}

// ago is a compact age: 5s, 3m, 2h, 4d.
func ago(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:n])
	}
	return string(r[:n-1]) + "…"
}
