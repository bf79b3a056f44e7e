package nudge

// InputLine says what a runtime's input line (the agent's composer, a shell's command
// line) holds, as the detector last read it: the runtime record's input_line, so an
// orchestrator can see why a trigger waits.
type InputLine string

// Input line contents.
const (
	// InputEmpty: nothing typed; a trigger can be typed now.
	InputEmpty InputLine = "empty"
	// InputDraft: a human's unsubmitted text; triggers wait (OPERATOR_BUSY).
	InputDraft InputLine = "draft"
	// InputOurs: a trigger's envelope typed by nudge and not yet entered, in full or as
	// the placeholder the agent folds a large paste into.
	InputOurs InputLine = "ours"
	// InputUnknown: no input line could be read (no capture yet, no composer on screen:
	// a dialog, a starting or busy TUI without one).
	InputUnknown InputLine = "unknown"
)
