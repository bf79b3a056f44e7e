package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/approvals"
	"github.com/nudgehq/nudge/cmd/nudge/standin"
)

// TestCodexDialogOverChannel: Codex states its approval requests on its app-server; nudge
// follows the runtime's thread there, and a dialog answered through nudge (approve, then
// deny) is answered over that channel with the decision Codex offers, not with keys. The
// dialog closes on Codex's own screen, the approved command ran and the denied one did
// not, and the next prompt reaches the model once.
func TestCodexDialogOverChannel(t *testing.T) {
	ft := startFullTurns(t, agentCase{agent: "codex", env: "NUDGE_TEST_CODEX", pkg: "@openai/codex", api: standin.Responses})
	ft.send("first", "say hello")
	ft.waitAcked("first")
	ft.waitReady("first")
	root := ft.td.cfg.Panes.Roots[0]
	follower := ft.td.d.Rooms().Approvals
	for i, c := range []struct{ choice, file string }{{"approve", "approved.txt"}, {"deny", "denied.txt"}} {
		id := []string{"tool-a", "tool-d"}[i]
		ft.send(id, "create the file standin:tool=`touch "+c.file+"`")
		ft.waitReadiness("NEEDS_CONFIRMATION")
		for deadline := time.Now().Add(30 * time.Second); len(follower.Pending(ft.rt.RuntimeID)) == 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: Codex's approval request never reached nudge over its app-server\nscreen:\n%s", id, ft.screen())
			}
		}
		ft.answerDialog(c.choice)
		ft.waitAcked(id)
		ft.waitReady(id)
		if screen := ft.screen(); strings.Contains(screen, "Would you like to run") {
			t.Fatalf("%s: the dialog is still on Codex's screen after the answer over its channel:\n%s", id, screen)
		}
		_, err := os.Stat(filepath.Join(root, c.file))
		if ran := err == nil; ran != (c.choice == "approve") {
			t.Fatalf("%s: %s, and the command ran: %v", id, c.choice, ran)
		}
	}
	resp, err := unixGet(t0(), ft.td.cfg.Socket, "/v1/events?since=0&follow=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := strings.Count(string(body), `"via":"`+approvals.BackendCodex+`"`); n != 2 {
		t.Fatalf("%d answers went over Codex's app-server, want 2:\n%s", n, grepLines(string(body), "dialog_answered"))
	}
	var recs []nudge.AuditRecord
	ft.td.c.do(t0(), "GET", "/v1/audit?event=approval_answered&runtime="+ft.rt.RuntimeID, nil, &recs)
	if len(recs) != 2 || !strings.Contains(recs[0].Reason, `accept "`) || !strings.Contains(recs[0].Reason, "touch approved.txt") ||
		!strings.Contains(recs[1].Reason, "touch denied.txt") || strings.Contains(recs[1].Reason, "accept") {
		t.Fatalf("the audit of the answers sent over the channel: %+v", recs)
	}
	t.Logf("audit: %s | %s", recs[0].Reason, recs[1].Reason)
	ft.send("after", "and now something else")
	ft.waitAcked("after")
	ft.waitModelGot("after")
	for _, id := range []string{"first", "after"} {
		if n := standin.Count(ft.srv.Requests(), id); n != 1 {
			t.Errorf("the model got %s %d times, want 1", id, n)
		}
	}
}

// grepLines is the lines of s that hold word.
func grepLines(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
