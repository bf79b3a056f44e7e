package cli

import "github.com/nudgehq/nudge/cmd/nudge/tui"

// The CLI's printers (package tui).
var (
	printJSON      = tui.PrintJSON
	printRuntimes  = tui.PrintRuntimes
	printTriggers  = tui.PrintTriggers
	printAudit     = tui.PrintAudit
	printSchedules = tui.PrintSchedules
	printTokens    = tui.PrintTokens
	printEvent     = tui.PrintEvent
	printable      = tui.Printable
)
