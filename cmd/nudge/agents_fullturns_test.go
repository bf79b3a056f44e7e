package main

import (
	"testing"

	"github.com/nudgehq/nudge/cmd/nudge/standin"
)

// Full turns of Gemini CLI, OpenCode and Pi against their model stand-ins (see
// testFullTurns).

func TestGeminiFullTurns(t *testing.T) {
	testFullTurns(t, agentCase{agent: "gemini", env: "NUDGE_TEST_GEMINI", pkg: "@google/gemini-cli", api: standin.Gemini,
		approve: []string{"Enter"}, maxKB: 63})
}

func TestOpenCodeFullTurns(t *testing.T) {
	testFullTurns(t, agentCase{agent: "opencode", env: "NUDGE_TEST_OPENCODE", pkg: "opencode-ai", api: standin.Chat,
		approve: []string{"Enter"}, maxKB: 63})
}

// TestPiFullTurns: Pi has no approval dialog (it runs its tools without asking; a
// permission gate would be an extension of the user's own), so its run has no
// approval part.
func TestPiFullTurns(t *testing.T) {
	t.Log("pi: no approval case: Pi runs tools without an approval dialog")
	testFullTurns(t, agentCase{agent: "pi", env: "NUDGE_TEST_PI", pkg: "@mariozechner/pi-coding-agent", api: standin.Chat, maxKB: 63})
}
