package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/mcp"
)

// mcpSession connects the SDK's client in-process to an MCP server that is a client of td.
func mcpSession(t *testing.T, td *testDaemon, token string) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ac := api.NewClient(td.cfg.Socket, token)
	st, ct := sdk.NewInMemoryTransports()
	done := make(chan error, 1)
	srv := mcp.NewServer(ac, "test")
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- ss.Wait() }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		<-done
		cancel()
		ac.Close()
	})
	return cs
}

// callTool calls a tool and decodes its structured result into out (if the call succeeded).
func callTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any, out any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !res.IsError && out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: structured result %s: %v", name, b, err)
		}
	}
	return res
}

func toolText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestMCPToolsDriveARealDaemon: an MCP host lists the tools, spawns a shell runtime,
// triggers it waiting for the receipt, reads the receipt and the pane, and stops it; a
// refused call is a tool error carrying the API's error body.
func TestMCPToolsDriveARealDaemon(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	cs := mcpSession(t, td, "")
	ctx := context.Background()

	tl, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tl.Tools {
		names[tool.Name] = true
		if tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("tool %s: want input and output schemas", tool.Name)
		}
	}
	for _, n := range []string{"list_runtimes", "get_runtime", "spawn", "stop", "pause", "resume", "tail", "trigger", "get_trigger", "ack", "answer_dialog"} {
		if !names[n] {
			t.Errorf("tool %s missing; have %v", n, names)
		}
	}
	if len(tl.Tools) > 12 {
		t.Errorf("%d tools: keep it to a few (12 at most), not one per endpoint", len(tl.Tools))
	}

	var rt api.Runtime
	if res := callTool(t, cs, "spawn", map[string]any{"workspace": "mcpws", "role": "sh", "agent": "shell", "dir": td.cfg.Panes.Roots[0]}, &rt); res.IsError {
		t.Fatalf("spawn: %s", toolText(res))
	}
	if rt.RuntimeID != "rt_mcpws.sh" {
		t.Fatalf("spawn: runtime %+v", rt)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })

	var list struct{ Runtimes []api.Runtime }
	callTool(t, cs, "list_runtimes", map[string]any{"workspace": "mcpws"}, &list)
	if len(list.Runtimes) != 1 || list.Runtimes[0].RuntimeID != rt.RuntimeID {
		t.Fatalf("list_runtimes: %+v", list)
	}

	var tr mcp.TriggerResult
	res := callTool(t, cs, "trigger", map[string]any{"workspace": "mcpws", "agent": "sh", "prompt": "echo mcp-was-here",
		"trigger_id": "mcp-t1", "wait_for": "acked", "wait": "60s"}, &tr)
	if res.IsError || tr.Reached == nil || !*tr.Reached || tr.State != "acked" {
		t.Fatalf("trigger with wait_for acked: %s", toolText(res))
	}

	var got mcp.TriggerResult
	callTool(t, cs, "get_trigger", map[string]any{"trigger_id": "mcp-t1"}, &got)
	if got.TriggerID != "mcp-t1" || got.State != "acked" || got.SubmittedAt == nil || got.Reached != nil {
		t.Fatalf("get_trigger: %+v", got)
	}

	deadline := time.Now().Add(30 * time.Second)
	for {
		var tail api.Tail
		callTool(t, cs, "tail", map[string]any{"runtime_id": rt.RuntimeID, "lines": 20}, &tail)
		if strings.Contains(strings.Join(tail.Lines, "\n"), "mcp-was-here") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tail never showed the prompt: %q", tail.Lines)
		}
		time.Sleep(50 * time.Millisecond)
	}

	var paused api.Runtime
	callTool(t, cs, "pause", map[string]any{"runtime_id": rt.RuntimeID}, &paused)
	if !paused.Paused {
		t.Fatalf("pause: %+v", paused)
	}
	callTool(t, cs, "resume", map[string]any{"runtime_id": rt.RuntimeID}, &paused)
	if paused.Paused {
		t.Fatalf("resume: %+v", paused)
	}

	// A refused call: a tool error whose text is the API's error body.
	res = callTool(t, cs, "get_runtime", map[string]any{"runtime_id": "rt_mcpws.nobody"}, nil)
	var body api.Error
	if !res.IsError || json.Unmarshal([]byte(toolText(res)), &body) != nil || body.ErrorCode != "NOT_FOUND" || body.Message == "" {
		t.Fatalf("get_runtime of an unknown runtime: error %v, %q", res.IsError, toolText(res))
	}
	res = callTool(t, cs, "trigger", map[string]any{"workspace": "mcpws", "agent": "sh", "prompt": "x", "wait_for": "acked", "wait": "forever"}, nil)
	if !res.IsError || !strings.Contains(toolText(res), `"error_code":"BAD_REQUEST"`) {
		t.Fatalf("trigger with a bad wait: error %v, %q", res.IsError, toolText(res))
	}

	var stopped api.Runtime
	if res := callTool(t, cs, "stop", map[string]any{"runtime_id": rt.RuntimeID, "reason": "test done"}, &stopped); res.IsError {
		t.Fatalf("stop: %s", toolText(res))
	}
	if stopped.Status == "ready" {
		t.Fatalf("stop: still %s", stopped.Status)
	}
}
