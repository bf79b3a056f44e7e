package cli

import (
	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
)

// stateWord is a runtime's state in one word (tui.StateWord).
func stateWord(rt nudge.Runtime) string { return tui.RuntimeState(rt) }

// statusRow is one line of `nudge status`.
type statusRow = tui.StatusRow

// The words of package tui, as the CLI's tables use them.
var (
	ago      = tui.Ago
	truncate = tui.Truncate
)
