package cli

import (
	"os"
	"testing"
)

// TestMain runs the tests with the agent CLIs drawn as in a user's terminal. A CI
// runner's CI (read by the CLIs' colour libraries), NO_COLOR or FORCE_COLOR=0 reaches
// every pane through the tmux server's environment and turns the agents' colours off;
// a dialog drawn without them does not tell its command from its description, so no
// policy answers it (detector's TestDialogCommand covers that screen).
func TestMain(m *testing.M) {
	for _, k := range []string{"CI", "NO_COLOR", "FORCE_COLOR"} {
		os.Unsetenv(k)
	}
	os.Exit(m.Run())
}
