// Package act is what the commands that act (spawn, register, trigger, pause, resume,
// stop, restart) print and check: a short line for a person (RuntimeLine, TriggerLine),
// the record as JSON otherwise (PrintRuntime, PrintReceipt); Stop, which stops several
// runtimes at once and says what it does while it waits; and CheckTarget, which refuses a
// trigger to an agent no runtime answers to before anything is sent.
package act

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

// RuntimeLine is what verb (spawned, registered, paused, resumed, stopped, restarted) did
// to rt, and what to do next.
func RuntimeLine(verb string, rt api.Runtime) string {
	id, state := tui.Printable(rt.RuntimeID), tui.RuntimeState(rt.Runtime)
	switch verb {
	case "spawned", "restarted":
		return fmt.Sprintf("%s %s (%s) in pane %s of %s: %s; `nudge tail %s` shows its screen", verb, id,
			tui.Printable(rt.Agent), tui.Printable(orDash(rt.PaneID)), tui.Printable(rt.TmuxSession), state, id)
	case "registered":
		return fmt.Sprintf("registered %s (%s) at pane %s: %s", id, tui.Printable(rt.Agent), tui.Printable(orDash(rt.PaneID)), state)
	case "paused":
		return fmt.Sprintf("paused %s: its triggers wait until `nudge resume %s`", id, id)
	case "resumed":
		return fmt.Sprintf("resumed %s: %s, %d trigger(s) queued", id, state, rt.QueueDepth)
	case "stopped":
		return fmt.Sprintf("stopped %s (%s): it stays stopped until `nudge restart %s`", id, rt.Status, id)
	}
	return fmt.Sprintf("%s %s: %s", verb, id, state)
}

// PrintRuntime prints rt as JSON, or the short line of verb.
func PrintRuntime(w io.Writer, asJSON bool, verb string, rt api.Runtime) error {
	if asJSON {
		return tui.PrintJSON(w, rt)
	}
	_, err := fmt.Fprintln(w, RuntimeLine(verb, rt))
	return err
}

// TriggerLine is a receipt in a line (and the reply below it, when there is one).
func TriggerLine(t api.Trigger) string {
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

// PrintReceipt prints t as JSON, or its line.
func PrintReceipt(w io.Writer, asJSON bool, t api.Trigger) error {
	if asJSON {
		return tui.PrintJSON(w, t)
	}
	_, err := fmt.Fprintln(w, TriggerLine(t))
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ReceiptPrinter prints one receipt: JSON, its line (line: the trigger command's for a
// person) or a table.
func ReceiptPrinter(asJSON, line bool) func(io.Writer, api.Trigger) error {
	return func(w io.Writer, t api.Trigger) error {
		if line {
			return PrintReceipt(w, asJSON, t)
		}
		return tui.PrintTriggers(w, asJSON, t)
	}
}
