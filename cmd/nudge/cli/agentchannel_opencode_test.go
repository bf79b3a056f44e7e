package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/agentchannel"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
	"github.com/nudgehq/nudge/cmd/nudge/standin"
)

// TestOpenCodeChannelEachPromptOnce: with the channel turned on in a profile override (it
// is off by default: docs/agents.md), OpenCode (1.18.33 and later) is spawned with its own
// HTTP server on a loopback port nudge chose and a password of nudge's in its environment.
// The first prompt is typed (the session is not known before it); every prompt after it
// goes to the server, none typed: one to the idle agent, and two while it is busy with a
// slow turn, which OpenCode queues itself. Each reaches the model once, is acked from
// OpenCode's record and carries its own reply, and shows in OpenCode's TUI as a typed
// prompt does.
func TestOpenCodeChannelEachPromptOnce(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("OpenCode's channel needs the listener's owner, read on Linux only")
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "panes", "profiles", "opencode.json"))
	if err != nil {
		t.Fatal(err)
	}
	var prof map[string]any
	if err := json.Unmarshal(b, &prof); err != nil {
		t.Fatal(err)
	}
	prof["channel"], prof["channel_flag"], prof["channel_since"] = "opencode", "--port", "1.18.33"
	dir := t.TempDir()
	b, _ = json.Marshal(prof)
	if err := os.WriteFile(filepath.Join(dir, "opencode.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	ft := startFullTurns(t, agentCase{agent: "opencode", env: "NUDGE_TEST_OPENCODE", pkg: "opencode-ai", api: standin.Chat,
		stalled: 20 * time.Second, config: func(cfg *daemon.Config) { cfg.ProfileDir = dir }})
	ft.send("first", "say hello")
	ft.waitAcked("first")
	ft.waitReady("first")
	ft.td.waitRuntime(ft.rt.RuntimeID, func(r runtimeView) bool { return strings.HasPrefix(r.SessionID, "ses_") })
	ft.send("idle", "say hello again")
	ft.waitAcked("idle")
	ft.waitReady("idle")
	ft.send("slow", "think long standin:slow=1500ms")
	ft.waitModelGot("slow")
	ft.send("queued1", "first while busy")
	ft.send("queued2", "second while busy standin:slow=500ms")
	for _, id := range ft.ids {
		tr := ft.waitAcked(id)
		want := agentchannel.BackendOpenCode
		if id == "first" {
			want = "tmux"
		}
		if tr.DeliveryBackend != want {
			t.Errorf("%s went by %q, want %q", id, tr.DeliveryBackend, want)
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
	if screen := ft.screen(); !strings.Contains(screen, "second while busy") {
		t.Errorf("the prompt handed to OpenCode's server is not in its TUI:\n%s", screen)
	}
	t.Logf("story of queued1: %s", events(ft.td.audit("queued1")))
}
