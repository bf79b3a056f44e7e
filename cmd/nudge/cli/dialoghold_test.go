package cli

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
	eventstream "github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/cmd/nudge/standin"
)

// dialogHold is how long the dialog hold tests leave a CLI's dialog on screen.
const dialogHold = 10 * time.Second

// TestCodexDialogHeld, TestClaudeDialogHeld, TestGeminiDialogHeld and
// TestOpenCodeDialogHeld: a real CLI asks to run a command and its operator takes their
// time. While the dialog stands on the screen, whatever the CLI redraws meanwhile (Codex
// blinks its title every second), the runtime stays NEEDS_CONFIRMATION: no readiness
// event in the hold, one dialog_shown, one notification. The dialog is then approved
// through nudge and the turn ends READY. With NUDGE_RECORD_STREAMS set, the pane's
// stream is recorded as AGENT_dialog.stream (detector/testdata/streams).
func TestCodexDialogHeld(t *testing.T) {
	testDialogHeld(t, agentCase{agent: "codex", env: "NUDGE_TEST_CODEX", pkg: "@openai/codex", api: standin.Responses})
}

func TestClaudeDialogHeld(t *testing.T) {
	testDialogHeld(t, agentCase{agent: "claude", env: "NUDGE_TEST_CLAUDE", pkg: "@anthropic-ai/claude-code", api: standin.Messages})
}

func TestGeminiDialogHeld(t *testing.T) {
	testDialogHeld(t, agentCase{agent: "gemini", env: "NUDGE_TEST_GEMINI", pkg: "@google/gemini-cli", api: standin.Gemini})
}

func TestOpenCodeDialogHeld(t *testing.T) {
	testDialogHeld(t, agentCase{agent: "opencode", env: "NUDGE_TEST_OPENCODE", pkg: "opencode-ai", api: standin.Chat})
}

// heldEvents is what the event stream said about one runtime, as the notifier saw it.
type heldEvents struct {
	mu        sync.Mutex
	readiness []nudge.Readiness // every readiness event, in order
	shown     int               // dialog_shown events
}

func (h *heldEvents) counts() (readiness int, shown int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.readiness), h.shown
}

func testDialogHeld(t *testing.T, c agentCase) {
	notified := filepath.Join(t.TempDir(), "notified.ndjson")
	t.Setenv("NOTIFY_TEST_OUT", notified)
	c.config = func(cfg *daemon.Config) {
		cfg.Notify.Command = `{ cat; echo; } >> "$NOTIFY_TEST_OUT"`
		// The prompt that raised the dialog is acked after the answer: the hold, and a slow
		// CLI's way to its dialog, must fit in its ack timeout.
		cfg.Inject.AckTimeout = 3 * time.Minute
	}
	ft := startFullTurns(t, c)
	ft.recordAs(c.agent + "_dialog")
	defer ft.stopRecording()
	ft.mark("READY", "idle composer")

	var ev heldEvents
	stop := ft.td.d.Rooms().Events.Observe(func(e eventstream.Event) {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		switch d, _ := e.Value.(eventstream.Readiness); {
		case e.Type == "readiness" && d.RuntimeID == ft.rt.RuntimeID:
			ev.readiness = append(ev.readiness, d.Readiness)
		case e.Type == "dialog_shown" && strings.Contains(string(e.Detail), `"`+ft.rt.RuntimeID+`"`):
			ev.shown++
		}
	})
	defer stop()
	notes := func() []string {
		b, _ := os.ReadFile(notified)
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, `"`+ft.rt.RuntimeID+`"`) {
				out = append(out, l)
			}
		}
		return out
	}

	ft.send("tool", "create the file standin:tool=`touch APPROVED_MARK`")
	// OpenCode's first shell call of a session takes a while to ask (testApprovalDenied).
	var rt runtimeView
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline) && (rt.Dialog == nil || rt.Readiness != "NEEDS_CONFIRMATION"); time.Sleep(50 * time.Millisecond) {
		ft.td.c.do(t0(), "GET", "/v1/runtimes/"+ft.rt.RuntimeID, nil, &rt)
	}
	if rt.Dialog == nil || rt.Readiness != "NEEDS_CONFIRMATION" {
		t.Fatalf("no dialog read on the runtime: %s\nstory: %s\nscreen:\n%s", rt.Readiness, story(ft.td.audit("tool")), ft.screen())
	}
	ft.mark("NEEDS_CONFIRMATION", "dialog shown")
	n0, _ := ev.counts()

	// The hold: the operator looks at the dialog; ls is read now and then.
	var seen []string
	marks := 1
	for start := time.Now(); time.Since(start) < dialogHold; time.Sleep(250 * time.Millisecond) {
		var now runtimeView
		if err := ft.td.c.do(t0(), "GET", "/v1/runtimes/"+ft.rt.RuntimeID, nil, &now); err == nil &&
			(now.Readiness != "NEEDS_CONFIRMATION" || now.Dialog == nil || now.Dialog.DialogID != rt.Dialog.DialogID) {
			seen = append(seen, string(now.Readiness))
		}
		if time.Since(start) > time.Duration(marks)*dialogHold/4 {
			ft.mark("NEEDS_CONFIRMATION", "dialog held") // the replay classifies the screen here too
			marks++
		}
	}
	n1, shown := ev.counts()
	ev.mu.Lock()
	during := append([]nudge.Readiness(nil), ev.readiness[n0:n1]...)
	all := append([]nudge.Readiness(nil), ev.readiness...)
	ev.mu.Unlock()
	if len(during) != 0 || len(seen) != 0 {
		t.Errorf("readiness changed while the dialog stood still: events %v, runtime read %v\nscreen:\n%s", during, seen, ft.screen())
	}
	if shown != 1 {
		t.Errorf("%d dialog_shown events for one dialog, want 1", shown)
	}
	var confirm int
	for _, n := range notes() {
		if strings.Contains(n, `"readiness":"NEEDS_CONFIRMATION"`) {
			confirm++
		}
	}
	if confirm != 1 {
		t.Errorf("%d NEEDS_CONFIRMATION notifications for one dialog, want 1:\n%s", confirm, strings.Join(notes(), "\n"))
	}
	t.Logf("%s: dialog %s held %s: readiness events %v (%d in the hold), %d dialog_shown, %d NEEDS_CONFIRMATION notification(s)",
		c.agent, rt.Dialog.DialogID, dialogHold, all, len(during), shown, confirm)

	ft.answerDialog("approve")
	ft.waitAcked("tool")
	ft.waitReady("tool")
	ft.mark("READY", "approved, the turn over")
	if _, err := os.Stat(filepath.Join(ft.td.cfg.Panes.Roots[0], "APPROVED_MARK")); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
}
