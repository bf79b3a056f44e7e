package main

import "github.com/nudgehq/nudge"

// cleanCapture is what a pane capture becomes before it leaves the daemon: plain text
// (nudge.StripANSI) with its secrets masked (nudge.Redact).
func cleanCapture(s string) string { return nudge.Redact(nudge.StripANSI(s)) }
