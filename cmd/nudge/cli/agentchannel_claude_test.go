package cli

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/agentchannel"
	"github.com/nudgehq/nudge/cmd/nudge/standin"
)

// TestClaudeChannelEachPromptOnce: a Claude Code that has a messaging socket (2.1.224 and
// later; NUDGE_TEST_CLAUDE_CHANNEL names one) is spawned with a socket nudge chose, and
// every trigger goes through it, none typed: one to the idle agent, and two while it is
// busy with a slow turn, which the agent queues itself. Each reaches the model once, is
// acked from the session's record and carries its own reply; the composer is never
// typed into.
func TestClaudeChannelEachPromptOnce(t *testing.T) {
	if os.Getenv("NUDGE_TEST_CLAUDE_CHANNEL") == "" {
		t.Skip("NUDGE_TEST_CLAUDE_CHANNEL not set (.ci/test installs a Claude Code with a messaging socket)")
	}
	c := agentCase{agent: "claude", env: "NUDGE_TEST_CLAUDE_CHANNEL", pkg: "@anthropic-ai/claude-code", api: standin.Messages}
	ft := startFullTurns(t, c)
	ft.send("idle", "say hello")
	ft.waitAcked("idle")
	ft.waitReady("idle")
	ft.send("slow", "think long standin:slow=1500ms")
	ft.waitModelGot("slow")
	ft.send("queued1", "first while busy")
	ft.send("queued2", "second while busy standin:slow=500ms")
	for _, id := range ft.ids {
		tr := ft.waitAcked(id)
		if tr.DeliveryBackend != agentchannel.BackendClaude {
			t.Errorf("%s went by %q, want %q", id, tr.DeliveryBackend, agentchannel.BackendClaude)
		}
		for deadline := time.Now().Add(time.Minute); tr.Reply == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			ft.td.c.do(t0(), "GET", "/v1/triggers/"+id, nil, &tr)
		}
		if !strings.Contains(tr.Reply, "ACK_TRIGGER:"+id) {
			t.Errorf("%s: reply %q, want its own", id, tr.Reply)
		}
	}
	ft.waitReady("queued2")
	for _, id := range ft.ids {
		if n := standin.Count(ft.srv.Requests(), id); n != 1 {
			t.Errorf("the model got %s %d times, want 1", id, n)
		}
	}
	t.Logf("story of queued1: %s", events(ft.td.audit("queued1")))
}

// TestClaudeChannelAfterRestart: a Claude Code runtime nudge restarts comes back with its
// messaging socket: the prompt after the restart goes through it too, not typed.
func TestClaudeChannelAfterRestart(t *testing.T) {
	if os.Getenv("NUDGE_TEST_CLAUDE_CHANNEL") == "" {
		t.Skip("NUDGE_TEST_CLAUDE_CHANNEL not set (.ci/test installs a Claude Code with a messaging socket)")
	}
	ft := startFullTurns(t, agentCase{agent: "claude", env: "NUDGE_TEST_CLAUDE_CHANNEL", pkg: "@anthropic-ai/claude-code", api: standin.Messages})
	ft.send("before", "say hello")
	ft.waitAcked("before")
	ft.waitReady("before")
	if err := ft.td.c.do(t0(), "POST", "/v1/runtimes/"+ft.rt.RuntimeID+"/restart", nil, nil); err != nil {
		t.Fatal(err)
	}
	ft.td.waitRuntime(ft.rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" && r.Readiness == "READY" && r.Restarts > 0 })
	ft.send("after", "say hello again")
	for _, id := range ft.ids {
		if tr := ft.waitAcked(id); tr.DeliveryBackend != agentchannel.BackendClaude {
			t.Errorf("%s went by %q, want %q", id, tr.DeliveryBackend, agentchannel.BackendClaude)
		}
	}
	ft.waitModelGot("after")
	for _, id := range ft.ids {
		if n := standin.Count(ft.srv.Requests(), id); n != 1 {
			t.Errorf("the model got %s %d times, want 1", id, n)
		}
	}
}
