package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// TestShellPromptIsAComment: a prompt to a plain shell (`--agent shell`, bash) is typed
// as a comment, every line of it: the shell shows it and runs none of it. A multi-line
// prompt whose second line is `touch made-by-prompt` creates nothing, and a prompt with
// shell syntax in it is no syntax error.
func TestShellPromptIsAComment(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, newTestConfig(t))
	dir := td.cfg.Panes.Roots[0]
	rt := td.spawnShell("sh", "plain")
	for i, prompt := range []string{"look at this:\ntouch made-by-prompt\necho ran-by-prompt", "fix it (now); touch made-by-prompt2"} {
		id := []string{"shc-1", "shc-2"}[i]
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "sh", "agent": "plain", "prompt": prompt}); err != nil {
			t.Fatal(err)
		}
		if got := td.waitTrigger(id, closed); got.State != nudge.StateAcked {
			t.Fatalf("%s: %+v", id, got)
		}
		td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Readiness == nudge.Ready })
	}
	// The shell runs lines in order: once a line typed after the prompts has run, so
	// have the prompts' lines.
	td.tmux("send-keys", "-t", rt.PaneID, "-l", "echo after-$((6*7))")
	td.tmux("send-keys", "-t", rt.PaneID, "Enter")
	var screen string
	for i := 0; i < 200 && !strings.Contains(screen, "after-42"); i++ {
		screen = td.tmux("capture-pane", "-p", "-J", "-S", "-100", "-t", rt.PaneID)
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(screen, "after-42") {
		t.Fatalf("the shell never ran the line typed after the prompts:\n%s", screen)
	}
	for _, f := range []string{"made-by-prompt", "made-by-prompt2"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("the prompt ran in the shell (%s created):\n%s", f, screen)
		}
	}
	for _, bad := range []string{"syntax error", "command not found", "\nran-by-prompt"} {
		if strings.Contains(screen, bad) {
			t.Errorf("the shell says %q:\n%s", bad, screen)
		}
	}
	if !strings.Contains(screen, "# [BRIDGE_TRIGGER id=shc-1") || !strings.Contains(screen, "# touch made-by-prompt") {
		t.Errorf("the prompt is not shown as a comment:\n%s", screen)
	}
}
