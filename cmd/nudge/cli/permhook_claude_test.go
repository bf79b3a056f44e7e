package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
	"github.com/nudgehq/nudge/cmd/nudge/permhook"
	"github.com/nudgehq/nudge/cmd/nudge/standin"
)

// TestClaudeDialogOverHook: a Claude Code with a messaging socket (2.1.224 and later;
// NUDGE_TEST_CLAUDE_CHANNEL names one) is spawned with nudge's PermissionRequest hook (a
// settings file of nudge's; the hook is the nudge binary). A tool call of the stand-in
// model raises Claude Code's dialog on the screen and, beside it, the hook's request to
// nudge. `nudge approve` and `nudge deny` (with a reason) go through the hook, not as
// keys: the dialog closes on Claude Code's own screen, the approved command runs and the
// denied one does not (the deny stops the turn, as Claude Code's own "No" does), and each
// answer is on the event stream and in the audit log as the hook's. A dialog answered at
// the screen by a person releases the hook's request (nothing is left waiting). Every
// prompt reaches the model once. (The screen's answer comes before the deny: the stand-in
// model takes the result of a tool call a deny stopped for the end of its turn.)
func TestClaudeDialogOverHook(t *testing.T) {
	if os.Getenv("NUDGE_TEST_CLAUDE_CHANNEL") == "" {
		t.Skip("NUDGE_TEST_CLAUDE_CHANNEL not set (.ci/test installs a Claude Code with a messaging socket)")
	}
	self := buildChaosNudge(t)
	ft := startFullTurns(t, agentCase{agent: "claude", env: "NUDGE_TEST_CLAUDE_CHANNEL", pkg: "@anthropic-ai/claude-code", api: standin.Messages,
		config: func(cfg *daemon.Config) {
			cfg.Panes.Self = self
			cfg.Inject.AckTimeout = 3 * time.Minute // the prompt that raised a dialog is acked after the answer
		}})
	ft.send("first", "say hello")
	ft.waitAcked("first")
	ft.waitReady("first")
	root := ft.td.cfg.Panes.Roots[0]
	perms := ft.td.d.Rooms().Perms
	held := func(id string, n int) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); len(perms.Held(ft.rt.RuntimeID)) != n; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d requests of Claude Code's hook held, want %d\nscreen:\n%s", id, len(perms.Held(ft.rt.RuntimeID)), n, ft.screen())
			}
		}
	}
	for i, c := range []struct{ choice, file string }{{"approve", "approved.txt"}, {"", "by-hand.txt"}, {"deny", "denied.txt"}} {
		id := []string{"tool-a", "by-hand", "tool-d"}[i]
		ft.send(id, "create the file standin:tool=`touch "+c.file+"`")
		ft.waitReadiness("NEEDS_CONFIRMATION")
		held(id, 1)
		if c.choice == "" { // a person at the screen
			ft.td.tmux("send-keys", "-t", ft.rt.PaneID, "1")
		} else {
			ft.answerDialog(c.choice)
		}
		ft.waitAcked(id)
		ft.waitReady(id)
		held(id, 0)
		screen := ft.screen()
		if strings.Contains(screen, "Do you want to proceed?") {
			t.Fatalf("%s: the dialog is still on Claude Code's screen after the answer through its hook:\n%s", id, screen)
		}
		if c.choice == "deny" && !strings.Contains(screen, "Interrupted") {
			t.Errorf("%s: the deny did not stop the turn, as Claude Code's own No does:\n%s", id, screen)
		}
		_, err := os.Stat(filepath.Join(root, c.file))
		if ran := err == nil; ran != (c.choice != "deny") {
			t.Fatalf("%s: %s, and the command ran: %v\nscreen:\n%s", id, c.choice, ran, screen)
		}
	}
	resp, err := unixGet(t0(), ft.td.cfg.Socket, "/v1/events?since=0&follow=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := strings.Count(string(body), `"via":"`+permhook.Backend+`"`); n != 2 {
		t.Fatalf("%d answers went through Claude Code's hook, want 2:\n%s", n, grepLines(string(body), "dialog_answered"))
	}
	var recs []nudge.AuditRecord
	ft.td.c.do(t0(), "GET", "/v1/audit?event=approval_answered&runtime="+ft.rt.RuntimeID, nil, &recs)
	if len(recs) != 2 || !strings.Contains(recs[0].Reason, `allow Bash "touch approved.txt"`) || !strings.Contains(recs[1].Reason, `deny Bash "touch denied.txt"`) {
		t.Fatalf("the audit of the answers through the hook: %+v", recs)
	}

	ft.send("after", "and now something else")
	ft.waitAcked("after")
	// The first request after a stopped turn carries the stopped tool call's result too.
	for deadline := time.Now().Add(time.Minute); standin.Count(ft.srv.Requests(), "after") == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after: acked, but the model never got it\nscreen:\n%s", ft.screen())
		}
	}
	for _, id := range ft.ids {
		if n := standin.Count(ft.srv.Requests(), id); n != 1 {
			t.Errorf("the model got %s %d times, want 1", id, n)
		}
	}
	t.Logf("audit: %s | %s", recs[0].Reason, recs[1].Reason)
}
