package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/mcp"
)

// readmeSnippets returns the documented MCP snippets (docs/orchestrators.md, where the
// README's reference moved): the Codex config.toml table and the Claude Code .mcp.json.
func readmeSnippets(t *testing.T) (codexTOML, claudeJSON string) {
	t.Helper()
	b, err := os.ReadFile("../../../docs/orchestrators.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```(toml|json)\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		switch {
		case m[1] == "toml" && strings.Contains(m[2], "[mcp_servers.nudge]"):
			codexTOML = m[2]
		case m[1] == "json" && strings.Contains(m[2], `"mcpServers"`):
			claudeJSON = m[2]
		}
	}
	if codexTOML == "" || claudeJSON == "" {
		t.Fatalf("docs/orchestrators.md lacks the Codex (%t) or the Claude Code (%t) MCP snippet", codexTOML != "", claudeJSON != "")
	}
	return codexTOML, claudeJSON
}

// tomlCommand reads command and args of the snippet's table (their TOML values are JSON).
func tomlCommand(t *testing.T, snippet string) (string, []string) {
	t.Helper()
	var cmd string
	var args []string
	for _, line := range strings.Split(snippet, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "command":
			if err := json.Unmarshal([]byte(strings.TrimSpace(v)), &cmd); err != nil {
				t.Fatalf("command: %v", err)
			}
		case "args":
			if err := json.Unmarshal([]byte(strings.TrimSpace(v)), &args); err != nil {
				t.Fatalf("args: %v", err)
			}
		}
	}
	return cmd, args
}

// inspectorCLI finds the npm MCP client @modelcontextprotocol/inspector-cli: its package
// directory from $NUDGE_TEST_MCP_INSPECTOR, else the npm cache that .ci/test fills.
func inspectorCLI(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("NUDGE_TEST_MCP_INSPECTOR")
	if dir == "" {
		dir, _ = filepath.Abs("../../../.cache/npm/node_modules/@modelcontextprotocol/inspector-cli")
	}
	if _, err := os.Stat(filepath.Join(dir, "build", "index.js")); err != nil {
		t.Skip("@modelcontextprotocol/inspector-cli not installed (.ci/test installs it into .cache/npm)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not on PATH")
	}
	return dir
}

// TestMCPSnippetsRunNudgeMCP: the documented MCP snippets name `nudge mcp`, and that command,
// started by real MCP clients as their config says, serves the daemon's tools: the npm
// MCP Inspector CLI lists them and calls one; Codex reads the config.toml snippet; Claude
// Code connects through the .mcp.json snippet.
func TestMCPSnippetsRunNudgeMCP(t *testing.T) {
	codexTOML, claudeJSON := readmeSnippets(t)
	var mj struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(claudeJSON), &mj); err != nil {
		t.Fatalf(".mcp.json snippet: %v", err)
	}
	srv := mj.MCPServers["nudge"]
	if srv.Command != "nudge" || !reflect.DeepEqual(srv.Args, []string{"mcp"}) {
		t.Fatalf(".mcp.json snippet runs %q %q, want nudge [mcp]", srv.Command, srv.Args)
	}
	cmd, args := tomlCommand(t, codexTOML)
	if cmd != "nudge" || !reflect.DeepEqual(args, []string{"mcp"}) {
		t.Fatalf("config.toml snippet runs %q %q, want nudge [mcp]", cmd, args)
	}

	bin := buildWatchBinary(t)
	td := startDaemon(t, newTestConfig(t))
	rt := td.spawnShell("snip", "sh")
	// What a client starts: `nudge mcp` found on PATH, the daemon's socket from the
	// environment (as a user's shell would have it, or the default).
	env := append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"), "NUDGE_SOCKET="+td.cfg.Socket)
	run := func(t *testing.T, dir string, extraEnv []string, name string, argv ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, name, argv...)
		c.Dir, c.Env = dir, append(append([]string{}, env...), extraEnv...)
		out, err := c.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("%s %q: %v\n%s\n%s", name, argv, err, out, stderr)
		}
		return string(out)
	}

	t.Run("inspector", func(t *testing.T) {
		pkg := inspectorCLI(t)
		// index.js finds its own package.json relative to the working directory.
		build := filepath.Join(pkg, "build")
		base := append([]string{"index.js", cmd}, args...)
		var list struct {
			Tools []struct {
				Name         string         `json:"name"`
				InputSchema  map[string]any `json:"inputSchema"`
				OutputSchema map[string]any `json:"outputSchema"`
			} `json:"tools"`
		}
		out := run(t, build, nil, "node", append(base, "--method", "tools/list")...)
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("tools/list: %v\n%s", err, out)
		}
		names := []string{}
		for _, tool := range list.Tools {
			names = append(names, tool.Name)
			if tool.InputSchema == nil || tool.OutputSchema == nil {
				t.Errorf("tool %s lacks a schema", tool.Name)
			}
		}
		if len(list.Tools) != 11 || !strings.Contains(strings.Join(names, " "), "answer_dialog") {
			t.Fatalf("tools/list: %v", names)
		}
		var call struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Runtimes []struct {
					RuntimeID string `json:"runtime_id"`
					Status    string `json:"status"`
				} `json:"runtimes"`
			} `json:"structuredContent"`
		}
		out = run(t, build, nil, "node", append(base, "--method", "tools/call", "--tool-name", "list_runtimes", "--tool-arg", "workspace=snip")...)
		if err := json.Unmarshal([]byte(out), &call); err != nil {
			t.Fatalf("tools/call: %v\n%s", err, out)
		}
		if rts := call.StructuredContent.Runtimes; call.IsError || len(rts) != 1 || rts[0].RuntimeID != rt.RuntimeID {
			t.Fatalf("tools/call list_runtimes: %s", out)
		}
	})

	t.Run("codex", func(t *testing.T) {
		codex := agentBinary(t, "codex", "NUDGE_TEST_CODEX", "@openai/codex")
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(codexTOML), 0o600); err != nil {
			t.Fatal(err)
		}
		out := run(t, home, []string{"HOME=" + home, "CODEX_HOME=" + home}, codex, "mcp", "get", "nudge", "--json")
		var got struct {
			Transport struct {
				Type    string   `json:"type"`
				Command string   `json:"command"`
				Args    []string `json:"args"`
			} `json:"transport"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("codex mcp get: %v\n%s", err, out)
		}
		if got.Transport.Type != "stdio" || got.Transport.Command != "nudge" || !reflect.DeepEqual(got.Transport.Args, []string{"mcp"}) {
			t.Fatalf("codex reads the snippet as %s", out)
		}
	})

	t.Run("claude", func(t *testing.T) {
		claude := agentBinary(t, "claude", "NUDGE_TEST_CLAUDE", "@anthropic-ai/claude-code")
		home := t.TempDir()
		t.Cleanup(func() { killProcessesUnder(t, home) })
		proj := filepath.Join(home, "proj")
		if err := os.MkdirAll(proj, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proj, ".mcp.json"), []byte(claudeJSON), 0o600); err != nil {
			t.Fatal(err)
		}
		// The approval `claude` would ask for once: trust the project and its .mcp.json server.
		trust, _ := json.Marshal(map[string]any{"projects": map[string]any{proj: map[string]any{
			"hasTrustDialogAccepted": true, "enabledMcpjsonServers": []string{"nudge"}}}})
		if err := os.WriteFile(filepath.Join(home, ".claude.json"), trust, 0o600); err != nil {
			t.Fatal(err)
		}
		out := run(t, proj, []string{"HOME=" + home, "ANTHROPIC_API_KEY=dummy", "ANTHROPIC_BASE_URL=http://127.0.0.1:9",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1"}, claude, "mcp", "get", "nudge")
		if !strings.Contains(out, "Connected") {
			t.Fatalf("claude mcp get nudge: %s", out)
		}
	})
}

// TestOrchestratorGuideRuns runs the shell examples of docs/orchestrators.md as written,
// against a test daemon, with the nudge binary on PATH: each command must succeed.
func TestOrchestratorGuideRuns(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq not on PATH (the guide's examples use it)")
	}
	b, err := os.ReadFile("../../../docs/orchestrators.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	if len(blocks) == 0 {
		t.Fatal("the guide has no sh example")
	}
	bin := buildWatchBinary(t)
	cfg := newTestConfig(t)
	startDaemon(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", blocks[0][1])
	c.Dir = cfg.Panes.Roots[0] // spawn --dir "$PWD" must lie under a root
	c.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"), "NUDGE_SOCKET="+cfg.Socket)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("the guide's shell example failed: %v\n%s", err, out)
	}
}

// TestMCPCommandUsesTheCallersToken: `nudge mcp`, started as an MCP host starts it with
// NUDGE_TOKEN in its environment (never on its command line), acts with that token's
// scope: it sees and triggers only the token's workspace, and the receipt names the
// token's subject as the caller.
func TestMCPCommandUsesTheCallersToken(t *testing.T) {
	bin := buildWatchBinary(t)
	td := startDaemon(t, newTestConfig(t))
	td.spawnShell("mine", "sh")
	td.spawnShell("other", "sh")
	tok := td.issue(t, "--subject", "orch", "--workspace", "mine", "--verbs", "read,trigger", "--ttl", "1h")

	cmd := exec.Command(bin, "mcp")
	cmd.Env = append(os.Environ(), "NUDGE_SOCKET="+td.cfg.Socket, "NUDGE_TOKEN="+tok)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	var list struct{ Runtimes []api.Runtime }
	callTool(t, cs, "list_runtimes", nil, &list)
	if len(list.Runtimes) != 1 || list.Runtimes[0].WorkspaceID != "mine" {
		t.Fatalf("list_runtimes with a token for workspace mine: %+v", list.Runtimes)
	}
	res := callTool(t, cs, "trigger", map[string]any{"workspace": "other", "agent": "sh", "prompt": "echo no"}, nil)
	if !res.IsError || !strings.Contains(toolText(res), `"error_code":"FORBIDDEN"`) {
		t.Fatalf("trigger outside the token's workspace: %v %s", res.IsError, toolText(res))
	}
	var tr mcp.TriggerResult
	res = callTool(t, cs, "trigger", map[string]any{"workspace": "mine", "agent": "sh", "prompt": "echo yes", "wait_for": "submitted", "wait": "60s"}, &tr)
	if res.IsError || tr.Reached == nil || !*tr.Reached || !strings.HasPrefix(tr.Caller, "orch#") {
		t.Fatalf("trigger in the token's workspace: %s", toolText(res))
	}
	if strings.Contains(strings.Join(cmd.Args, " "), tok) {
		t.Fatal("the token is on the command line")
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		t.Fatalf("nudge mcp did not exit 0 when its client went away: %v", cmd.ProcessState)
	}
}

// TestMCPCommandEndsCleanlyOnSignal: a host that stops `nudge mcp` with SIGTERM sees a
// normal end (exit 0, nothing on stderr), as when it closes stdin.
func TestMCPCommandEndsCleanlyOnSignal(t *testing.T) {
	bin := buildWatchBinary(t)
	cmd := exec.Command(bin, "mcp", "--socket", filepath.Join(t.TempDir(), "absent.sock"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Once it answers initialize, its signal handler is in place.
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, `"serverInfo"`) {
		t.Fatalf("initialize: %q %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil || stderr.Len() != 0 {
		t.Fatalf("nudge mcp after SIGTERM: %v, stderr %q", err, stderr.String())
	}
}

// TestMCPCommandAnswersWhatItReadBeforeEOF: a client that writes initialize and tools/list
// and then closes its end of stdin gets both answers before `nudge mcp` exits (it used to
// exit at end of input with nothing written).
func TestMCPCommandAnswersWhatItReadBeforeEOF(t *testing.T) {
	bin := buildWatchBinary(t)
	td := startDaemon(t, newTestConfig(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "mcp", "--socket", td.cfg.Socket)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":"two","method":"tools/list"}` + "\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nudge mcp: %v, stderr %q", err, stderr.String())
	}
	answered := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && len(m.ID) > 0 {
			answered[string(m.ID)] = string(m.Result)
		}
	}
	if !strings.Contains(answered["1"], `"serverInfo"`) {
		t.Errorf("no answer to initialize; stdout %q", out)
	}
	if !strings.Contains(answered[`"two"`], `"list_runtimes"`) {
		t.Errorf("no answer to tools/list; stdout %q", out)
	}
}
