package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
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
		t.Logf("%s: %s attempts=%d signal=%s backend=%s reply=%q", id, tr.State, tr.Attempts, tr.AckSignal, tr.DeliveryBackend, tr.Reply)
		// Codex's prompts go through its app-server once its session id is known (the
		// question comes after six turns): nothing is typed.
		if c.agent == "codex" && id == c.agent+"-question" && tr.DeliveryBackend != "codex_app_server" {
			t.Errorf("%s: delivery_backend %q, want codex_app_server\nstory: %s", id, tr.DeliveryBackend, story(ft.td.audit(id)))
		}
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

// TestOpenCodeBusyEachPromptOnce: the real OpenCode, busy when each next prompt comes.
func TestOpenCodeBusyEachPromptOnce(t *testing.T) {
	testBusyOnce(t, agentCase{agent: "opencode", env: "NUDGE_TEST_OPENCODE", pkg: "opencode-ai", api: standin.Chat})
}

// testTwoInOneDir runs two runtimes of one CLI in the same directory, prompts to each in
// turn: each prompt reaches the model once, each receipt is acked by its own runtime's
// record and carries its own reply (a record is told apart by the prompts in it).
func testTwoInOneDir(t *testing.T, c agentCase) {
	c.script = busyReply(500 * time.Millisecond)
	ft := startFullTurns(t, c)
	var other runtimeView
	if err := ft.td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: ft.rt.WorkspaceID, Role: "dev2", Agent: c.agent, Dir: ft.td.cfg.Panes.Roots[0]}, &other); err != nil {
		t.Fatal(err)
	}
	ft.td.waitRuntime(other.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" && r.Readiness == "READY" })
	var ids []string
	for i := range 3 {
		for _, role := range []string{ft.rt.Role, "dev2"} {
			id := fmt.Sprintf("%s-%s-%d", c.agent, role, i)
			if _, err := ft.td.trigger(map[string]any{"trigger_id": id, "workspace": ft.rt.WorkspaceID, "agent": role, "prompt": "task " + id}); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		time.Sleep(700 * time.Millisecond)
	}
	for _, id := range ids {
		var tr nudge.Trigger
		if err := ft.td.c.do(t0(), "GET", "/v1/triggers/"+id+"?wait=2m&for=reply", nil, &tr); err != nil || tr.State != "acked" ||
			!strings.Contains(tr.Reply, id) || tr.Attempts != 1 {
			t.Errorf("%s: %s signal=%s attempts=%d reply=%q %v\nstory: %s", id, tr.State, tr.AckSignal, tr.Attempts, tr.Reply, err, story(ft.td.audit(id)))
			continue
		}
		t.Logf("%s: %s signal=%s reply=%q", id, tr.State, tr.AckSignal, tr.Reply)
	}
	time.Sleep(2 * time.Second)
	reqs := ft.srv.Requests()
	for _, id := range ids {
		if n := standin.Count(reqs, id); n != 1 {
			t.Errorf("%s: the model got the prompt %d times, want 1", id, n)
		}
	}
}

func TestClaudeTwoInOneDirectory(t *testing.T) {
	testTwoInOneDir(t, agentCase{agent: "claude", env: "NUDGE_TEST_CLAUDE", pkg: "@anthropic-ai/claude-code", api: standin.Messages})
}

func TestCodexTwoInOneDirectory(t *testing.T) {
	testTwoInOneDir(t, agentCase{agent: "codex", env: "NUDGE_TEST_CODEX", pkg: "@openai/codex", api: standin.Responses})
}

// TestPiLongFirstTurnGivenOnce: Pi writes its record only when its first answer is
// complete; a first turn much longer than the ack timeout (and its retries) is waited
// out while Pi's screen reads BUSY, and the prompt is given once, acked by the record.
func TestPiLongFirstTurnGivenOnce(t *testing.T) {
	c := agentCase{agent: "pi", env: "NUDGE_TEST_PI", pkg: "@mariozechner/pi-coding-agent", api: standin.Chat,
		script: busyReply(12 * time.Second)}
	c.config = func(cfg *daemon.Config) {
		cfg.Inject.AckTimeout, cfg.Inject.AckRetries = 2*time.Second, 2
		cfg.Inject.Backoff = []time.Duration{500 * time.Millisecond, time.Second}
	}
	ft := startFullTurns(t, c)
	ft.send("pi-long", "a long first task")
	var tr nudge.Trigger
	if err := ft.td.c.do(t0(), "GET", "/v1/triggers/pi-long?wait=1m&for=reply", nil, &tr); err != nil || tr.State != "acked" ||
		tr.AckSignal != "record" || tr.Attempts != 1 || !strings.Contains(tr.Reply, "pi-long") {
		t.Fatalf("%s signal=%s attempts=%d reply=%q %v\nstory: %s", tr.State, tr.AckSignal, tr.Attempts, tr.Reply, err, story(ft.td.audit("pi-long")))
	}
	time.Sleep(2 * time.Second)
	if n := standin.Count(ft.srv.Requests(), "pi-long"); n != 1 {
		t.Fatalf("the model got the prompt %d times, want 1\nstory: %s", n, story(ft.td.audit("pi-long")))
	}
}

// TestOpenCodeMergedPromptsGivenOnce: OpenCode glues a prompt typed while it is still
// taking in the previous one to that one's text ("…[/BRIDGE_TRIGGER][BRIDGE_TRIGGER
// id=…", one user message, one model call; the parse is TestEnvelopeIDs'). Two triggers
// held by a pause whose envelopes someone other than nudge types into OpenCode's pane that
// way are in its record, but were never handed to it: a record is the agent's own
// writing, and names of triggers not typed to it yet prove nothing (an agent could write
// them). They are not acked by it; once the pause ends each is typed, once, and acked by
// its own prompt in the record. (Acking them from the glued message would be the forgery
// TestRecordForgesNoQueuedTrigger shows; when nudge itself types both, both are handed and
// the glued message acks each once.)
func TestOpenCodeMergedPromptsGivenOnce(t *testing.T) {
	ft := startFullTurns(t, agentCase{agent: "opencode", env: "NUDGE_TEST_OPENCODE", pkg: "opencode-ai", api: standin.Chat,
		script: busyReply(0)})
	// A first turn: the record is found and shown to be this runtime's.
	ft.send("oc-first", "first task")
	ft.waitAcked("oc-first")
	ft.waitReady("the first turn")
	rt := "/v1/runtimes/" + ft.rt.RuntimeID
	if err := ft.td.c.do(t0(), "POST", rt+"/pause", nil, nil); err != nil {
		t.Fatal(err)
	}
	ids := []string{"oc-merged-a", "oc-merged-b"}
	var merged string
	for _, id := range ids {
		ft.send(id, "task "+id)
		merged += "[BRIDGE_TRIGGER id=" + id + " thread=- reason=trigger] task " + id + " [/BRIDGE_TRIGGER]"
	}
	// The first is held by the pause, the second waits behind it.
	ft.td.waitTrigger(ids[0], func(tr nudge.Trigger) bool { return tr.ErrorCode == "RUNTIME_PAUSED" })
	ft.td.tmux("send-keys", "-t", ft.rt.PaneID, "-l", merged)
	time.Sleep(500 * time.Millisecond)
	ft.td.tmux("send-keys", "-t", ft.rt.PaneID, "Enter")
	for _, id := range ids {
		ft.waitModelGot(id)
	}
	ft.waitReady("the merged turn")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	ft.td.d.Rooms().Acks.SyncRecord(ctx, ft.rt.RuntimeID) // the merged message is read
	cancel()
	for _, id := range ids {
		if tr, _ := ft.td.d.Rooms().Pipeline.Get(id); tr.State == "acked" || tr.InjectedAt != nil {
			t.Errorf("%s: %s before the pause ended, by a prompt nudge never typed\nstory: %s", id, tr.State, story(ft.td.audit(id)))
		}
	}
	if err := ft.td.c.do(t0(), "POST", rt+"/resume", nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		var tr nudge.Trigger
		if err := ft.td.c.do(t0(), "GET", "/v1/triggers/"+id+"?wait=2m", nil, &tr); err != nil || tr.State != "acked" || tr.AckSignal != "record" || tr.Attempts != 1 {
			t.Errorf("%s: %s signal=%s attempts=%d %v\nstory: %s", id, tr.State, tr.AckSignal, tr.Attempts, err, story(ft.td.audit(id)))
		}
	}
	time.Sleep(3 * time.Second) // a late retype would show up here
	reqs := ft.srv.Requests()
	for id, want := range map[string]int{"oc-first": 1, ids[0]: 2, ids[1]: 2} { // the merged turn, then nudge's own
		if n := standin.Count(reqs, id); n != want {
			t.Errorf("%s: the model got the prompt %d times, want %d\nstory: %s", id, n, want, story(ft.td.audit(id)))
		}
	}
}
