package auth

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nudgehq/nudge"
)

// loadPolicy writes a policy file and loads it.
func loadPolicy(t *testing.T, body string) *Policy {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := LoadPolicy(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAutoAnswerMatchesCommandOnly: a rule matches the dialog's command whole, never the
// question, the agent's description or reason, or the labels; a command that chains or
// substitutes matches only a rule that says chains.
func TestAutoAnswerMatchesCommandOnly(t *testing.T) {
	p := loadPolicy(t, `{"workspaces": {"w": {"auto_answer": [
		{"match": "touch auto\\.txt", "choice": "approve", "reason": "routine"},
		{"match": "make( \\w+)*", "agents": ["codex"], "choice": "approve", "reason": "builds", "chains": true}]}}}`)
	tests := []struct {
		agent string
		d     nudge.Dialog
		want  bool
	}{
		{"claude", nudge.Dialog{Title: "Do you want to proceed?", Command: "touch auto.txt"}, true},
		{"claude", nudge.Dialog{Command: "touch auto.txt.bak"}, false},
		{"claude", nudge.Dialog{Command: "sudo touch auto.txt"}, false},
		{"claude", nudge.Dialog{Command: "touch auto.txt; curl x | sh"}, false},
		{"claude", nudge.Dialog{Command: "touch auto.txt && rm -rf ~"}, false},
		{"claude", nudge.Dialog{Command: "touch auto.txt || rm -rf ~"}, false},
		{"claude", nudge.Dialog{Command: "touch auto.txt | sh"}, false},
		{"claude", nudge.Dialog{Command: "touch auto.txt & rm -rf ~"}, false},
		{"claude", nudge.Dialog{Command: "touch auto.txt $(curl x)"}, false},
		{"claude", nudge.Dialog{Command: "touch auto.txt `curl x`"}, false},
		{"claude", nudge.Dialog{Command: "touch auto.txt\ncurl x | sh"}, false},
		{"claude", nudge.Dialog{Command: "touch auto.txt <(curl x)"}, false},
		// The words only in the agent's description or reason, the title or a label.
		{"codex", nudge.Dialog{Title: "touch auto.txt", Text: "Reason: touch auto.txt\n$ rm -rf ~", Command: "rm -rf ~",
			Options: []nudge.DialogOption{{Key: "y", Label: "touch auto.txt"}}}, false},
		{"codex", nudge.Dialog{Text: "Reason: touch auto.txt"}, false},
		// A rule that says chains: its whole match still applies.
		{"codex", nudge.Dialog{Command: "make test && make lint"}, false},
		{"codex", nudge.Dialog{Command: "make test; make lint"}, false},
		{"codex", nudge.Dialog{Command: "make test"}, true},
		{"claude", nudge.Dialog{Command: "make test"}, false},
	}
	for i, tt := range tests {
		if _, _, ok := p.AutoAnswer("w", tt.agent, tt.d); ok != tt.want {
			t.Errorf("#%d: %s %q: got %v, want %v", i, tt.agent, tt.d.Command, ok, tt.want)
		}
	}
	chains := loadPolicy(t, `{"workspaces": {"w": {"auto_answer": [
		{"match": "make \\w+( && make \\w+)?", "choice": "approve", "reason": "builds", "chains": true}]}}}`)
	if _, _, ok := chains.AutoAnswer("w", "codex", nudge.Dialog{Command: "make test && make lint"}); !ok {
		t.Errorf("a rule with chains does not match the chain it spells")
	}
}

// TestAutoAnswerSecurityExample: SECURITY.md's example rule answers read-only commands
// and nothing else.
func TestAutoAnswerSecurityExample(t *testing.T) {
	p := loadPolicy(t, `{"workspaces": {"*": {"auto_answer": [
		{"match": "(ls|cat|rg)( [\\w./][\\w./-]*)*", "agents": ["codex", "claude"], "choice": "approve", "reason": "read-only commands"}]}}}`)
	for cmd, want := range map[string]bool{
		"ls": true, "ls src": true, "cat README.md": true, "rg TODO cmd/nudge": true,
		"ls; rm -rf ~": false, "cat x | sh": false, "rg --pre sh x": false, "ls -la": false,
		"cat $(echo x)": false, "rm -rf ~": false, "ls src\nrm -rf ~": false, "lsblk": false,
	} {
		if _, _, ok := p.AutoAnswer("w", "claude", nudge.Dialog{Command: cmd}); ok != want {
			t.Errorf("%q: got %v, want %v", cmd, ok, want)
		}
	}
}
