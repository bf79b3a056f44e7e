package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/standin"
)

// busyReply is the model of the busy runs: every turn takes delay (longer than the
// interval between triggers, so the agent is busy when the next prompt comes and queues
// it) and answers "Answer to <ids>." without any ack marker: the receipts can rest only
// on the agent's own record.
func busyReply(delay time.Duration) standin.Script {
	return func(req standin.Request) standin.Reply {
		if req.Side {
			return standin.Reply{Text: "Stand-in session"}
		}
		r := standin.Reply{Text: "Answer to " + strings.Join(standin.EnvelopeIDs(req.Prompt), ", ") + "."}
		if !req.ToolResult {
			r.Delay = delay
		}
		return r
	}
}

// busyPrompts are the prompts of a busy run: one line, several lines, 5 KiB.
func busyPrompts() []string {
	return []string{
		"first task: one line",
		"second task\nover\nthree lines",
		"third task: 5 KiB follows\n" + standin.Filler(5<<10, true),
		"fourth task: one line again",
		"fifth task\nwith two lines",
		"sixth task: the last",
	}
}

// testBusyOnce sends the busy prompts one second apart to an agent whose replies take
// 1.5 s: each prompt reaches the model exactly once, each receipt is acked by the
// agent's own record (not by a marker it was never asked to print).
func testBusyOnce(t *testing.T, c agentCase) {
	c.script = busyReply(1500 * time.Millisecond)
	ft := startFullTurns(t, c)
	for i, p := range busyPrompts() {
		if i > 0 {
			time.Sleep(time.Second)
		}
		ft.send(fmt.Sprintf("%s-busy-%d", c.agent, i), p)
	}
	for _, id := range ft.ids {
		ft.waitAcked(id)
	}
	// Each receipt gets the reply of the turn that took its prompt, from the record: the
	// stand-in's "Answer to <ids>." (a turn that took several queued prompts names them all).
	out, errOut, code := ft.td.runCLI("receipt", ft.ids[len(ft.ids)-1], "--reply", "--wait", "1m")
	if code != 0 || !strings.HasPrefix(out, "Answer to ") {
		t.Errorf("nudge receipt --reply: %d %q %s", code, out, errOut)
	}
	for _, id := range ft.ids {
		var tr nudge.Trigger
		if err := ft.td.c.do(t0(), "GET", "/v1/triggers/"+id+"?wait=1m&for=reply", nil, &tr); err != nil || tr.TurnEndedAt == nil ||
			!strings.HasPrefix(tr.Reply, "Answer to ") || !strings.Contains(tr.Reply, id) {
			t.Errorf("%s: reply %q (turn ended %v): %v\nstory: %s", id, tr.Reply, tr.TurnEndedAt, err, story(ft.td.audit(id)))
		}
	}
	// And a question asked with --wait-for reply prints the receipt with its answer.
	out, errOut, code = ft.td.runCLI("trigger", "--workspace", ft.rt.WorkspaceID, "--agent", ft.rt.Role, "--id", c.agent+"-question",
		"--wait-for", "reply", "--wait-timeout", "1m", "what is the answer?")
	ft.ids = append(ft.ids, c.agent+"-question")
	if code != 0 || !strings.Contains(out, `"reply": "Answer to `+c.agent+`-question."`) {
		t.Errorf("nudge trigger --wait-for reply: %d %s %s", code, out, errOut)
	}
	// The session id comes from the record (Claude Code prints none on its screen).
	var rt runtimeView
	ft.td.c.do(t0(), "GET", "/v1/runtimes/"+ft.rt.RuntimeID, nil, &rt)
	if rt.SessionID == "" {
		t.Errorf("no session id from the record: %+v", rt.Runtime)
	}
	time.Sleep(3 * time.Second) // a late duplicate would show up here
	reqs := ft.srv.Requests()
	for _, id := range ft.ids {
		var tr nudge.Trigger
		ft.td.c.do(t0(), "GET", "/v1/triggers/"+id, nil, &tr)
		if n := standin.Count(reqs, id); n != 1 {
			t.Errorf("%s: the model got the prompt %d times, want 1\nstory: %s", id, n, story(ft.td.audit(id)))
		}
		t.Logf("%s: %s attempts=%d signal=%s reply=%q", id, tr.State, tr.Attempts, tr.AckSignal, tr.Reply)
	}
}

// TestClaudeBusyEachPromptOnce: the real Claude Code, busy when each next prompt comes.
func TestClaudeBusyEachPromptOnce(t *testing.T) {
	testBusyOnce(t, agentCase{agent: "claude", env: "NUDGE_TEST_CLAUDE", pkg: "@anthropic-ai/claude-code", api: standin.Messages})
}

// TestCodexBusyEachPromptOnce: the real Codex, busy when each next prompt comes.
func TestCodexBusyEachPromptOnce(t *testing.T) {
	testBusyOnce(t, agentCase{agent: "codex", env: "NUDGE_TEST_CODEX", pkg: "@openai/codex", api: standin.Responses})
}

// TestGeminiBusyEachPromptOnce: the real Gemini CLI, busy when each next prompt comes.
func TestGeminiBusyEachPromptOnce(t *testing.T) {
	testBusyOnce(t, agentCase{agent: "gemini", env: "NUDGE_TEST_GEMINI", pkg: "@google/gemini-cli", api: standin.Gemini})
}

// TestPiBusyEachPromptOnce: the real Pi, busy when each next prompt comes.
func TestPiBusyEachPromptOnce(t *testing.T) {
	testBusyOnce(t, agentCase{agent: "pi", env: "NUDGE_TEST_PI", pkg: "@mariozechner/pi-coding-agent", api: standin.Chat})
}
