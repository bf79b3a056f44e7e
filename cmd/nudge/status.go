package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
)

// stateWord is a runtime's state in one word: the lifecycle status when it says the agent
// cannot take prompts (PAUSED, FAILED, OFFLINE, EXITED, STARTING, ...), else the detector's readiness.
func stateWord(rt nudge.Runtime) string { return tui.StateWord(rt.Status, rt.Readiness, rt.Paused) }

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
	return tui.ReceiptWord(t.State, t.Result, t.ErrorCode, t.Fallback)
}

// The words of package tui, as the CLI's tables use them.
var (
	stateOf   = tui.StateWord
	receiptOf = tui.ReceiptWord
	ago       = tui.Ago
	truncate  = tui.Truncate
)

// apiStateWord is stateWord for a runtime as package api has it.
func apiStateWord(rt api.Runtime) string { return tui.StateWord(rt.Status, rt.Readiness, rt.Paused) }

// apiReceiptWord is receiptWord for a receipt as package api has it.
func apiReceiptWord(t api.Trigger) string {
	return tui.ReceiptWord(t.State, t.Result, t.ErrorCode, t.Fallback)
}
