package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
	"github.com/nudgehq/nudge/cmd/nudge/standin"
)

// Full turns of Gemini CLI, OpenCode and Pi against their model stand-ins (see
// testFullTurns). Each reply of the prose step is made of the CLI pack's own busy,
// error and confirmation words, written as ordinary prose, the words that a cue
// anchored to a line start or to the composer would take for chrome last, so they
// sit just above the ack and the composer.

// geminiProse holds the gemini pack's words.
var geminiProse = []string{
	"Allow execution of [Shell]? was not asked. Apply this change? Do you want to proceed? Nobody asked.",
	"Do you trust the files in this folder? How would you like to authenticate (Use Enter to select)?",
	"Waiting for user confirmation is a phrase. ● 1. Yes, allow once is another.",
	"Traceback (most recent call last): none.",
	"panic: none. fatal: none.",
	"Error: none of the checks failed.",
	"[API Error: none] is how an error would read.",
	"✕ marks a failure; there is none.",
	"(esc to cancel, 3s) is how the status row reads while I work.",
	"Queued (press ↑ to edit) is a hint, nothing is queued.",
	"⠋ is a braille pattern, not a spinner.",
}

// openCodeProse holds the opencode pack's words.
var openCodeProse = []string{
	"Traceback (most recent call last): none.",
	"panic: none. fatal: none.",
	"Working... esc interrupt, esc to interrupt: words of the status row.",
	"Allow once   Allow always   Reject are the buttons of a dialog that is not open.",
	"Error: none of the checks failed.",
	"△ Permission required is a heading I am quoting.",
}

// piProse holds the pi pack's words.
var piProse = []string{
	"Traceback (most recent call last): none.",
	"panic: none.",
	"Working... (escape to cancel) esc to interrupt: words of the status row.",
	"Continue? (y/N) Press ENTER to continue: words of a prompt that is not open.",
	"Error: none of the checks failed.",
	"✗ marks a failure; there is none.",
	"↳ Alt+Up to edit all queued messages",
	"⠋ is a braille pattern, not a spinner.",
}

func TestGeminiFullTurns(t *testing.T) {
	testFullTurns(t, agentCase{agent: "gemini", env: "NUDGE_TEST_GEMINI", pkg: "@google/gemini-cli", api: standin.Gemini,
		approve: []string{"Enter"}, prose: geminiProse, maxKB: 63})
}

func TestOpenCodeFullTurns(t *testing.T) {
	testFullTurns(t, agentCase{agent: "opencode", env: "NUDGE_TEST_OPENCODE", pkg: "opencode-ai", api: standin.Chat,
		approve: []string{"Enter"}, prose: openCodeProse, maxKB: 63})
}

// TestPiFullTurns: Pi has no approval dialog (it runs its tools without asking; a
// permission gate would be an extension of the user's own), so its run has no
// approval part.
func TestPiFullTurns(t *testing.T) {
	t.Log("pi: no approval case: Pi runs tools without an approval dialog")
	testFullTurns(t, agentCase{agent: "pi", env: "NUDGE_TEST_PI", pkg: "@mariozechner/pi-coding-agent", api: standin.Chat,
		prose: piProse, maxKB: 63})
}

// TestGeminiApprovalDenied and TestOpenCodeApprovalDenied: a trigger sent while the
// CLI's approval dialog is open is held, nothing is typed into the dialog; the
// operator denies the tool call with nudge deny, the command does not run, and the
// held trigger is then delivered, acked, and given to the model once.
func TestGeminiApprovalDenied(t *testing.T) {
	testApprovalDenied(t, agentCase{agent: "gemini", env: "NUDGE_TEST_GEMINI", pkg: "@google/gemini-cli", api: standin.Gemini}) // nudge deny: "3. No, suggest changes (esc)"
}

func TestOpenCodeApprovalDenied(t *testing.T) {
	// nudge deny: Right from the selected button to "Reject", then Enter.
	testApprovalDenied(t, agentCase{agent: "opencode", env: "NUDGE_TEST_OPENCODE", pkg: "opencode-ai", api: standin.Chat})
}

// TestClaudeDialogDenied and TestCodexDialogDenied deny the dialog with `nudge deny`.
func TestClaudeDialogDenied(t *testing.T) {
	testApprovalDenied(t, agentCase{agent: "claude", env: "NUDGE_TEST_CLAUDE", pkg: "@anthropic-ai/claude-code", api: standin.Messages})
}

func TestCodexDialogDenied(t *testing.T) {
	testApprovalDenied(t, agentCase{agent: "codex", env: "NUDGE_TEST_CODEX", pkg: "@openai/codex", api: standin.Responses})
}

func testApprovalDenied(t *testing.T, c agentCase, deny ...string) {
	ft := startFullTurns(t, c)
	ft.send("tool", "create the file standin:tool=`touch denied.txt`")
	// OpenCode's first shell call of a session takes a while to ask (it loads its shell
	// parser): wait longer than waitReadiness does.
	deadline := time.Now().Add(2 * time.Minute)
	for rt := (runtimeView{}); rt.Readiness != "NEEDS_CONFIRMATION"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no approval dialog: runtime %s/%s\nscreen:\n%s", rt.Status, rt.Readiness, ft.screen())
		}
		ft.td.c.do(t0(), "GET", "/v1/runtimes/"+ft.rt.RuntimeID, nil, &rt)
	}
	ft.send("held", "sent while the dialog is open")
	time.Sleep(3 * time.Second)
	var held nudge.Trigger
	ft.td.c.do(t0(), "GET", "/v1/triggers/held", nil, &held)
	if held.InjectedAt != nil || held.State == "submitted" || strings.Contains(ft.screen(), "sent while the dialog") {
		t.Fatalf("typed into the approval dialog: %+v\nscreen:\n%s", held, ft.screen())
	}
	if deny == nil {
		ft.answerDialog("deny") // through nudge: the pack reads the dialog
	} else {
		ft.td.tmux(append([]string{"send-keys", "-t", ft.rt.PaneID}, deny...)...)
	}
	ft.waitAcked("held")
	ft.waitReady("held")
	if _, err := os.Stat(filepath.Join(ft.td.cfg.Panes.Roots[0], "denied.txt")); err == nil {
		t.Errorf("the denied command ran")
	}
	if n := standin.Count(ft.srv.Requests(), "held"); n != 1 {
		t.Errorf("the model got the held prompt %d times, want 1\nstory: %s\nscreen:\n%s", n, story(ft.td.audit("held")), ft.screen())
	}
	t.Logf("trigger held by the approval dialog, then denied: %s", events(ft.td.audit("held")))
}

// silentModel points an agent CLI (its setup in standin.Agents) at a model stand-in
// that never answers: each call waits until the test ends. The CLI then reaches nothing
// beyond loopback, and a prompt keeps it busy for good, for tests about input.
func silentModel(t *testing.T, home, root, agent string) *standin.Server {
	t.Helper()
	return scriptedModel(t, home, root, agent, func(req standin.Request) standin.Reply {
		if req.Side {
			return standin.Ack(req)
		}
		return standin.Reply{Delay: time.Hour}
	})
}

// scriptedModel is silentModel with a stand-in that answers by script.
func scriptedModel(t *testing.T, home, root, agent string, script standin.Script) *standin.Server {
	t.Helper()
	setup, ok := standin.Agents[agent]
	if !ok {
		t.Fatalf("no stand-in setup for %s", agent)
	}
	srv, err := standin.Start(setup.API, script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	env, err := setup.Setup(home, root, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return srv
}

// TestClaudeDialogAutoAnswered: a workspace policy's auto_answer rule approves a tool
// call's dialog with no one at the pane; the approved command runs, the answer is audited
// as the policy's with its reason, and a dialog the rule does not match waits for a human.
// The daemon runs as in a CI job (CI=true, which turns Claude Code's colours off): the
// claude profile takes CI out of the agent's environment, so the dialog's command is read.
func TestClaudeDialogAutoAnswered(t *testing.T) {
	t.Setenv("CI", "true")
	c := agentCase{agent: "claude", env: "NUDGE_TEST_CLAUDE", pkg: "@anthropic-ai/claude-code", api: standin.Messages}
	c.config = func(cfg *daemon.Config) {
		pol := filepath.Join(t.TempDir(), "policy.json")
		os.WriteFile(pol, []byte(`{"workspaces": {"ft": {"auto_answer": [
			{"match": "touch auto\\.txt", "agents": ["claude"], "choice": "approve", "reason": "creating auto.txt is routine"}]}}}`), 0o600)
		cfg.Auth.PolicyFile = pol
	}
	ft := startFullTurns(t, c)
	ft.send("auto", "create the file standin:tool=`touch auto.txt`")
	auto := filepath.Join(ft.td.cfg.Panes.Roots[0], "auto.txt")
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(auto); err == nil {
			break
		}
	}
	if _, err := os.Stat(auto); err != nil {
		var all []nudge.AuditRecord
		ft.td.c.do(t0(), "GET", "/v1/audit?runtime="+ft.rt.RuntimeID, nil, &all)
		var rt nudge.Runtime
		ft.td.c.do(t0(), "GET", "/v1/runtimes/"+ft.rt.RuntimeID, nil, &rt)
		t.Fatalf("the policy did not approve: %v\naudit: %+v\nreadiness %s, dialog %+v\nscreen:\n%s", err, all, rt.Readiness, rt.Dialog, ft.screen())
	}
	var recs []nudge.AuditRecord
	ft.td.c.do(t0(), "GET", "/v1/audit?event=dialog_answered&runtime="+ft.rt.RuntimeID, nil, &recs)
	if len(recs) != 1 || recs[0].Subject != "policy:auto_answer" || !strings.Contains(recs[0].Reason, "creating auto.txt is routine") {
		t.Fatalf("audit %+v", recs)
	}
	t.Logf("auto answer: %s", recs[0].Reason)
	ft.waitAcked("auto")
	ft.waitReady("auto")
	// Another command: no rule matches, the dialog waits.
	ft.send("manual", "create the file standin:tool=`touch manual.txt`")
	ft.waitReadiness("NEEDS_CONFIRMATION")
	time.Sleep(2 * time.Second)
	if _, err := os.Stat(filepath.Join(ft.td.cfg.Panes.Roots[0], "manual.txt")); err == nil {
		t.Fatal("a dialog no rule matches was answered")
	}
	ft.answerDialog("approve")
	ft.waitAcked("manual")
}
