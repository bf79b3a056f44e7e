package standin

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// An AgentSetup writes an agent CLI's own configuration into home (the CLI's private
// HOME) so that it talks to the stand-in at url, trusts the project folder root,
// opens on its composer without a first-run dialog, and sends nothing anywhere else.
// It returns the environment (KEY=VALUE) to run the CLI with, HOME aside. Keys are
// dummies.
type AgentSetup struct {
	API   API
	Setup func(home, root, url string) ([]string, error)
}

// Agents holds the setups by agent profile name; the files of other agents add theirs
// from init.
var Agents = map[string]AgentSetup{
	"codex":  {Responses, setupCodex},
	"claude": {Messages, setupClaude},
}

// DummyKey is the key the CLIs send; the stand-ins accept any.
const DummyKey = "sk-standin-dummy-0000000000000000"

// setupCodex defines a model provider for the stand-in in CODEX_HOME/config.toml
// (wire_api = "responses", the dummy key in the file: Codex's app-server daemon, which
// makes the model calls, need not inherit a variable; no retries so a scripted error
// shows at once), approvals on request (a tool call that asks to leave the sandbox is put
// to the operator), the project trusted, and no update check or analytics.
func setupCodex(home, root, url string) ([]string, error) {
	dir := filepath.Join(home, ".codex")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(`model = "gpt-5.1-codex"
model_provider = "standin"
approval_policy = "on-request"
sandbox_mode = "workspace-write"
check_for_update_on_startup = false

[model_providers.standin]
name = "standin"
base_url = %q
experimental_bearer_token = %q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[projects.%q]
trust_level = "trusted"
`, url+"/v1", DummyKey, root)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(conf), 0o600); err != nil {
		return nil, err
	}
	return []string{"CODEX_HOME=" + dir}, nil
}

// setupClaude marks onboarding done, approves the dummy key and trusts root in
// ~/.claude.json, and points Claude Code at the stand-in with ANTHROPIC_BASE_URL, with
// its updater, telemetry, error reports and other nonessential traffic off.
func setupClaude(home, root, url string) ([]string, error) {
	key := "sk-ant-api03-" + strings.TrimPrefix(DummyKey, "sk-")
	state := map[string]any{
		"hasCompletedOnboarding": true,
		"theme":                  "dark",
		"customApiKeyResponses":  map[string]any{"approved": []string{key[len(key)-20:]}, "rejected": []string{}},
		"projects":               map[string]any{root: map[string]any{"hasTrustDialogAccepted": true, "allowedTools": []string{}}},
	}
	b, _ := json.Marshal(state)
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600); err != nil {
		return nil, err
	}
	// Tool calls are put to the operator (newer releases default to an automatic mode
	// that decides them itself).
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		return nil, err
	}
	settings := `{"permissions": {"defaultMode": "default", "disableAutoMode": "disable"}, "disableAutoMode": "disable"}`
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(settings), 0o600); err != nil {
		return nil, err
	}
	return []string{
		"ANTHROPIC_BASE_URL=" + url,
		"ANTHROPIC_API_KEY=" + key,
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}, nil
}
