package cli

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/detector"
)

// pasteSizes are the prompt sizes (KiB) of the large-prompt tests: 1, 16 and 64 in CI;
// NUDGE_TEST_PASTE_FULL=1 runs the whole matrix, 1, 4, 8, 16 and 64.
func pasteSizes() []int {
	if os.Getenv("NUDGE_TEST_PASTE_FULL") != "" {
		return []int{1, 4, 8, 16, 64}
	}
	return []int{1, 16, 64}
}

// bigPrompt returns a prompt of about kib KiB (at most the daemon's 64 KiB limit less
// room for nothing else: the envelope is added on top), one line or many.
func bigPrompt(kib int, multi bool, tag string) string {
	n := min(kib<<10, 64<<10)
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		if multi && i > 0 {
			b.WriteByte('\n')
		} else if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s line %d of a large prompt, words to fill it up", tag, i)
	}
	return b.String()[:n]
}

// testLargePrompts types prompts of every size, one line and many, into a real agent
// CLI (no model: the first prompt starts a turn that cannot reach a model, and the agent
// stays busy; the later prompts are forced in for agents whose profile does not queue
// input) and checks that each one is
// submitted, and that no folded paste placeholder is ever taken for a human's draft
// (operator_busy stays false, input_line never "draft").
func testLargePrompts(t *testing.T, td *testDaemon, rt runtimeView, queues bool) int {
	n, queued := 0, 0
	for _, kib := range pasteSizes() {
		for _, multi := range []bool{false, true} {
			shape := "single"
			if multi {
				shape = "multi"
			}
			id := fmt.Sprintf("%s-%dk-%s", rt.WorkspaceID, kib, shape)
			req := map[string]any{"trigger_id": id, "workspace": rt.WorkspaceID, "agent": rt.Role, "prompt": bigPrompt(kib, multi, id)}
			if !queues && n > 0 {
				// The agent is busy with the first prompt (no model answers) and its profile
				// does not promise to queue input: force the rest in, past the readiness gate.
				req["force_override"], req["reason"] = true, "test: type while the agent is busy"
			}
			if _, err := td.trigger(req); err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			got := td.waitTriggerFor(id, 90*time.Second, func(t nudge.Trigger) bool { return t.SubmittedAt != nil || t.Closed })
			if got.SubmittedAt == nil {
				t.Fatalf("%s: not submitted: state %s code %s: %s\nscreen:\n%s", id, got.State, got.ErrorCode, got.Message,
					td.tmux("capture-pane", "-p", "-t", rt.PaneID))
			}
			var now runtimeView
			if err := td.c.do(t0(), "GET", "/v1/runtimes/"+rt.RuntimeID, nil, &now); err != nil {
				t.Fatal(err)
			}
			if now.OperatorBusy || now.InputLine == "draft" {
				t.Fatalf("%s: nudge's own prompt read as a human's draft: operator_busy %v input_line %q\nscreen:\n%s",
					id, now.OperatorBusy, now.InputLine, td.tmux("capture-pane", "-p", "-t", rt.PaneID))
			}
			n++
			if got.QueuedInAgent {
				queued++
			}
			t.Logf("%s: submitted (queued_in_agent %v)", id, got.QueuedInAgent)

		}
	}
	// Nothing of nudge's is left in the composer, as text or as a paste placeholder.
	packs, err := detector.LoadPacks("")
	if err != nil {
		t.Fatal(err)
	}
	var c detector.Classification
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if c = detector.Classify(packs[rt.Agent], td.tmux("capture-pane", "-p", "-e", "-t", rt.PaneID)); c.Draft == "" {
			break
		}
	}
	if c.Draft != "" {
		t.Errorf("%s: the composer still holds %.200q\nscreen:\n%s", rt.Agent, c.Draft, td.tmux("capture-pane", "-p", "-t", rt.PaneID))
	}
	t.Logf("%s: %d large prompts submitted (sizes %v KiB, one line and multi-line), %d queued in the agent", rt.Agent, n, pasteSizes(), queued)
	return queued
}

// spawnSlow is spawnAgent with a deadline for CLIs that start slowly under load.
func (td *testDaemon) spawnSlow(ws, agent, role string) runtimeView {
	td.t.Helper()
	var rt runtimeView
	if err := td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: ws, Role: role, Agent: agent, Dir: td.cfg.Panes.Roots[0]}, &rt); err != nil {
		td.t.Fatal(err)
	}
	return td.waitRuntimeFor(rt.RuntimeID, 90*time.Second, func(r runtimeView) bool { return r.Status == "ready" && r.Readiness == "READY" })
}

// waitTriggerFor is waitTrigger with its own deadline.
func (td *testDaemon) waitTriggerFor(id string, d time.Duration, ok func(nudge.Trigger) bool) nudge.Trigger {
	td.t.Helper()
	var tr nudge.Trigger
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var got nudge.Trigger // fresh per answer, as in waitTrigger
		if err := td.c.do(t0(), "GET", "/v1/triggers/"+id, nil, &got); err == nil {
			if tr = got; ok(tr) {
				return tr
			}
		}
	}
	return tr
}

// waitRuntimeFor is waitRuntime with its own deadline.
func (td *testDaemon) waitRuntimeFor(id string, d time.Duration, ok func(runtimeView) bool) runtimeView {
	td.t.Helper()
	var rt runtimeView
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var got runtimeView // fresh per answer, as in waitRuntime
		if err := td.c.do(t0(), "GET", "/v1/runtimes/"+id, nil, &got); err == nil {
			if rt = got; ok(rt) {
				return rt
			}
		}
	}
	td.t.Fatalf("runtime %s: never reached the wanted state: status %s readiness %s (%s) input_line %s operator_busy %v\nscreen:\n%s",
		id, rt.Status, rt.Readiness, rt.Summary, rt.InputLine, rt.OperatorBusy, td.tmux("capture-pane", "-p", "-t", rt.PaneID))
	return rt
}

// TestCodexLargePromptsSubmitted: the real Codex folds a large typed burst into
// "[Pasted Content N chars]"; each prompt is still submitted and never a human's draft.
func TestCodexLargePromptsSubmitted(t *testing.T) {
	cfg, _, model := codexSetup(t)
	td := startDaemon(t, cfg)
	testLargePrompts(t, td, td.spawnCodex("dev"), true)
	modelGotEachAtMostOnce(t, model)
}

// TestClaudeLargePromptsSubmitted: the same with the real Claude Code ("[Pasted text #N
// +M lines]").
func TestClaudeLargePromptsSubmitted(t *testing.T) {
	cfg, model := claudeSetup(t)
	td := startDaemon(t, cfg)
	defer modelGotEachAtMostOnce(t, model)
	// Claude Code stays busy with the first prompt (the model never answers): the later
	// ones are queued in it ("Press up to edit queued messages"), and say so.
	if queued := testLargePrompts(t, td, td.spawnSlow("cl", "claude", "dev"), true); queued == 0 {
		t.Error("no prompt was receipted queued_in_agent, though Claude Code was busy for all but the first")
	}
}

// TestGeminiLargePromptsSubmitted: the same with the real Gemini CLI ("[Pasted Text: N
// lines]").
func TestGeminiLargePromptsSubmitted(t *testing.T) {
	// A stand-in that never answers keeps the first turn running (without a model Gemini
	// CLI fails the turn and puts the prompt back into its composer).
	cfg, model := geminiSetup(t)
	td := startDaemon(t, cfg)
	testLargePrompts(t, td, td.spawnSlow("gm", "gemini", "dev"), false)
	modelGotEachAtMostOnce(t, model)
}

// TestOpenCodeLargePromptsSubmitted: the same with the real OpenCode ("[Pasted ~N
// lines]").
func TestOpenCodeLargePromptsSubmitted(t *testing.T) {
	cfg, home := agentEnv(t, agentBinary(t, "opencode", "NUDGE_TEST_OPENCODE", "opencode-ai"))
	model := silentModel(t, home, cfg.Panes.Roots[0], "opencode")
	td := startDaemon(t, cfg)
	testLargePrompts(t, td, td.spawnSlow("oc", "opencode", "dev"), false)
	modelGotEachAtMostOnce(t, model)
}

// TestPiLargePromptsSubmitted: the same with the real Pi ("[paste #N +M lines]").
func TestPiLargePromptsSubmitted(t *testing.T) {
	cfg, home := agentEnv(t, agentBinary(t, "pi", "NUDGE_TEST_PI", "@mariozechner/pi-coding-agent"))
	model := silentModel(t, home, cfg.Panes.Roots[0], "pi")
	td := startDaemon(t, cfg)
	testLargePrompts(t, td, td.spawnSlow("pi", "pi", "dev"), true)
	modelGotEachAtMostOnce(t, model)
}

// TestRuntimeInputLine: the runtime record says what its input line holds, read from the
// real pane: empty, then a human's draft (the trigger would wait), then empty again.
func TestRuntimeInputLine(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rt := td.spawnShell("il", "dev")
	td.waitRuntimeFor(rt.RuntimeID, 30*time.Second, func(r runtimeView) bool { return r.InputLine == "empty" })
	td.tmux("send-keys", "-t", rt.PaneID, "-l", "echo half typed by a human")
	td.waitRuntimeFor(rt.RuntimeID, 30*time.Second, func(r runtimeView) bool { return r.InputLine == "draft" && r.OperatorBusy })
	// nudge ls says why a trigger would wait, as a column and in its JSON.
	if out, _, code := td.runCLI("ls"); code != 0 || !strings.Contains(rowOf(out, rt.RuntimeID), "draft") {
		t.Errorf("nudge ls (exit %d) does not show the draft:\n%s", code, out)
	}
	if out, _, code := td.runCLI("ls", "--json"); code != 0 || !strings.Contains(out, `"input_line": "draft"`) {
		t.Errorf("nudge ls --json (exit %d) has no input_line draft:\n%s", code, out)
	}
	td.tmux("send-keys", "-t", rt.PaneID, "C-u")
	td.waitRuntimeFor(rt.RuntimeID, 60*time.Second, func(r runtimeView) bool { return r.InputLine == "empty" })
}
