package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nudgehq/nudge/detector"
)

// claudeSetup gives the real Claude Code a private HOME whose .claude.json marks the
// onboarding done, approves a dummy API key and trusts the test's root folder, so it
// opens on its composer.
func claudeSetup(t *testing.T) serveConfig {
	t.Helper()
	cfg, home := agentEnv(t, agentBinary(t, "claude", "NUDGE_TEST_CLAUDE", "@anthropic-ai/claude-code"))
	key := "sk-ant-api03-nudge-test-dummy-key-000000000000"
	state := map[string]any{
		"hasCompletedOnboarding": true,
		"theme":                  "dark",
		"customApiKeyResponses":  map[string]any{"approved": []string{key[len(key)-20:]}, "rejected": []string{}},
		"projects":               map[string]any{cfg.Roots[0]: map[string]any{"hasTrustDialogAccepted": true, "allowedTools": []string{}}},
	}
	b, _ := json.Marshal(state)
	os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600)
	t.Setenv("ANTHROPIC_API_KEY", key)
	t.Setenv("DISABLE_AUTOUPDATER", "1")
	return cfg
}

// TestClaudeTriggersSubmitted drives the real Claude Code TUI: five triggers in a row,
// the later ones while it is busy retrying the API (it queues input, as its profile
// says), each leave the composer, and none is left typed but unsent.
func TestClaudeTriggersSubmitted(t *testing.T) {
	cfg := claudeSetup(t)
	td := startDaemon(t, cfg)
	rt := td.spawnAgent("cl", "claude", nil)
	td.submitInRow(rt, "cl-", 5, func(i int) string { return fmt.Sprintf("task %d: it's \"quoted\"; $HOME", i) })
	packs, err := detector.LoadPacks("")
	if err != nil {
		t.Fatal(err)
	}
	screen := td.tmux("capture-pane", "-p", "-e", "-t", rt.PaneID)
	if c := detector.Classify(packs["claude"], screen); strings.Contains(c.Draft, "BRIDGE_TRIGGER") {
		t.Fatalf("composer still holds a prompt: %q\n%s", c.Draft, screen)
	}
}
