// Package inject is the trigger pipeline's delivery side. This part of it holds the pure,
// hot-path text pieces:
//
//	Sanitize      prompt text -> safe text (no control characters but LF, size-limited)
//	Envelope      the [BRIDGE_TRIGGER …] wrapper that reaches the agent as one message
//	TypeCommands  the tmux control-mode command lines that type the text into a pane
//	EnterCommand  the separate Enter key
//
// None of them allocate more than their result; all are fuzzed in package fuzz.
package inject
