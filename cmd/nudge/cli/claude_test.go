package cli

import (
	"fmt"
	"testing"

	"github.com/nudgehq/nudge/cmd/nudge/daemon"
	"github.com/nudgehq/nudge/cmd/nudge/standin"
)

// claudeSetup points the real Claude Code, in a private HOME with onboarding done and
// the test's root folder trusted, at a model stand-in on loopback that never answers
// (silentModel), so it opens on its composer and nothing leaves the machine.
func claudeSetup(t *testing.T) (daemon.Config, *standin.Server) {
	t.Helper()
	cfg, home := agentEnv(t, agentBinary(t, "claude", "NUDGE_TEST_CLAUDE", "@anthropic-ai/claude-code"))
	return cfg, silentModel(t, home, cfg.Panes.Roots[0], "claude")
}

// TestClaudeTriggersSubmitted drives the real Claude Code TUI: five triggers in a row,
// the later ones while it is busy with the first turn (it queues input, as its profile
// says), each leave the composer, and none is left typed but unsent.
func TestClaudeTriggersSubmitted(t *testing.T) {
	cfg, model := claudeSetup(t)
	td := startDaemon(t, cfg)
	rt := td.spawnAgent("cl", "claude", nil)
	td.submitInRow(rt, "cl-", 5, func(i int) string { return fmt.Sprintf("task %d: it's \"quoted\"; $HOME", i) })
	modelGotEachAtMostOnce(t, model)
	td.composerEmpties(rt.PaneID, "claude")
}
