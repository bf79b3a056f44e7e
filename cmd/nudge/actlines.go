package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
)

// The short lines the commands that act print for a person (-o table, the default on a
// terminal); -o json prints the record instead.

// runtimeLine is what verb (spawned, registered, paused, resumed, stopped, restarted) did
// to rt, and what to do next.
func runtimeLine(verb string, rt api.Runtime) string {
	id, state := tui.Printable(rt.RuntimeID), tui.RuntimeState(rt.Runtime)
	switch verb {
	case "spawned", "restarted":
		return fmt.Sprintf("%s %s (%s) in pane %s of %s: %s; `nudge tail %s` shows its screen", verb, id,
			tui.Printable(rt.Agent), orDash(rt.PaneID), tui.Printable(rt.TmuxSession), state, id)
	case "registered":
		return fmt.Sprintf("registered %s (%s) at pane %s: %s", id, tui.Printable(rt.Agent), orDash(rt.PaneID), state)
	case "paused":
		return fmt.Sprintf("paused %s: its triggers wait until `nudge resume %s`", id, id)
	case "resumed":
		return fmt.Sprintf("resumed %s: %s, %d trigger(s) queued", id, state, rt.QueueDepth)
	case "stopped":
		return fmt.Sprintf("stopped %s (%s): it stays stopped until `nudge restart %s`", id, rt.Status, id)
	}
	return fmt.Sprintf("%s %s: %s", verb, id, state)
}

// printActed prints rt as JSON, or the short line of verb.
func printActed(w io.Writer, asJSON bool, verb string, rt api.Runtime) error {
	if asJSON {
		return printJSON(w, rt)
	}
	_, err := fmt.Fprintln(w, runtimeLine(verb, rt))
	return err
}

// triggerLine is a receipt in a line (and the reply below it, when there is one).
func triggerLine(t api.Trigger) string {
	var b strings.Builder
	fmt.Fprintf(&b, "trigger %s", tui.Printable(t.TriggerID))
	if t.RuntimeID != "" {
		fmt.Fprintf(&b, " → %s", tui.Printable(t.RuntimeID))
	}
	fmt.Fprintf(&b, ": %s", tui.ReceiptWord(t.State, t.Result, t.ErrorCode, t.Fallback))
	if t.Message != "" && t.State == nudge.StateFailed {
		fmt.Fprintf(&b, " (%s)", tui.Truncate(tui.Printable(t.Message), 200))
	}
	if t.Reply != "" {
		b.WriteString("\n" + tui.PrintableText(t.Reply))
	}
	return b.String()
}

// printReceiptLine prints t as JSON, or its line.
func printReceiptLine(w io.Writer, asJSON bool, t api.Trigger) error {
	if asJSON {
		return printJSON(w, t)
	}
	_, err := fmt.Fprintln(w, triggerLine(t))
	return err
}
