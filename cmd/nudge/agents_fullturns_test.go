package main

import (
	"testing"

	"github.com/nudgehq/nudge/cmd/nudge/standin"
)

// Full turns of Gemini CLI, OpenCode and Pi against their model stand-ins (see
// testFullTurns). Each reply of the prose step is made of the CLI pack's own busy,
// error and confirmation words, written as ordinary prose, the words that a cue
// anchored to a line start or to the composer would take for chrome last, so they
// sit just above the ack and the composer.

// geminiProse holds the gemini pack's words.
var geminiProse = []string{
	"Allow execution of [Shell]? was not asked. Apply this change? Do you want to proceed? Nobody asked.",
	"Do you trust the files in this folder? How would you like to authenticate (Use Enter to select)?",
	"Waiting for user confirmation is a phrase. ● 1. Yes, allow once is another.",
	"Traceback (most recent call last): none.",
	"panic: none. fatal: none.",
	"Error: none of the checks failed.",
	"[API Error: none] is how an error would read.",
	"✕ marks a failure; there is none.",
	"(esc to cancel, 3s) is how the status row reads while I work.",
	"Queued (press ↑ to edit) is a hint, nothing is queued.",
	"⠋ is a braille pattern, not a spinner.",
}

// openCodeProse holds the opencode pack's words.
var openCodeProse = []string{
	"Traceback (most recent call last): none.",
	"panic: none. fatal: none.",
	"Working... esc interrupt, esc to interrupt: words of the status row.",
	"Allow once   Allow always   Reject are the buttons of a dialog that is not open.",
	"Error: none of the checks failed.",
	"△ Permission required is a heading I am quoting.",
}

// piProse holds the pi pack's words.
var piProse = []string{
	"Traceback (most recent call last): none.",
	"panic: none.",
	"Working... (escape to cancel) esc to interrupt: words of the status row.",
	"Continue? (y/N) Press ENTER to continue: words of a prompt that is not open.",
	"Error: none of the checks failed.",
	"✗ marks a failure; there is none.",
	"↳ Alt+Up to edit all queued messages",
	"⠋ is a braille pattern, not a spinner.",
}

func TestGeminiFullTurns(t *testing.T) {
	testFullTurns(t, agentCase{agent: "gemini", env: "NUDGE_TEST_GEMINI", pkg: "@google/gemini-cli", api: standin.Gemini,
		approve: []string{"Enter"}, prose: geminiProse, maxKB: 63})
}

func TestOpenCodeFullTurns(t *testing.T) {
	testFullTurns(t, agentCase{agent: "opencode", env: "NUDGE_TEST_OPENCODE", pkg: "opencode-ai", api: standin.Chat,
		approve: []string{"Enter"}, prose: openCodeProse, maxKB: 63})
}

// TestPiFullTurns: Pi has no approval dialog (it runs its tools without asking; a
// permission gate would be an extension of the user's own), so its run has no
// approval part.
func TestPiFullTurns(t *testing.T) {
	t.Log("pi: no approval case: Pi runs tools without an approval dialog")
	testFullTurns(t, agentCase{agent: "pi", env: "NUDGE_TEST_PI", pkg: "@mariozechner/pi-coding-agent", api: standin.Chat,
		prose: piProse, maxKB: 63})
}
