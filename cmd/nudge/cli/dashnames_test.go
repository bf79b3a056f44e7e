package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
	"github.com/nudgehq/nudge/detector"
)

// startDaemonLog is startDaemon with the daemon's log kept in a buffer.
func startDaemonLog(t *testing.T, cfg daemon.Config) (*testDaemon, *lockedBuffer) {
	t.Helper()
	var logs lockedBuffer
	env := &cliEnv{stdin: strings.NewReader(""), stdout: &logs, stderr: &logs, getenv: os.Getenv}
	ctx, cancel := context.WithCancel(context.Background())
	d, err := daemon.Open(ctx, cfg, env.stderr)
	if err != nil {
		cancel()
		t.Fatalf("open daemon: %v", err)
	}
	td := &testDaemon{t: t, cfg: cfg, d: d, c: newClient(cfg.Socket, ""), cancel: cancel, done: make(chan error, 1)}
	go func() { td.done <- d.Run(ctx) }()
	t.Cleanup(td.stop)
	return td, &logs
}

// TestLLMKeyFromDotEnvAndOutcomesAtInfo (issue 36 item 8): the LLM classifier's key comes
// from a .env file as seed 002 says (OPENROUTER_API_KEY), reaches the classifier's endpoint
// and nothing else: not the log (at debug, its most verbose level but trace), not a
// pane's environment. A trigger's final outcome is logged at info with seed 000 §16's log
// fields, so an operator at the default level sees it.
func TestLLMKeyFromDotEnvAndOutcomesAtInfo(t *testing.T) {
	const key = "sk-or-dotenv-5a1f0c93e7b24d68"
	standIn := newLLMStandIn(t)
	cfg := newTestConfig(t)
	cfg.ProfileDir = t.TempDir()
	writeFile(t, filepath.Join(cfg.ProfileDir, "odd.json"), `{"launch":["sh"],"allowed_launchers":["sh"],"pack":"shell",
		"queues_input":false,"ack_signals":["marker","api"],"submitted_is_ack":true,"ready_quiet":"200ms"}`)
	cfg.LLM.URL = standIn.srv.URL + "/v1/chat/completions"
	cfg.LLM.Model = "stand-in-model"
	cfg.LLM.Retries = 0
	t.Setenv(detector.DefaultAPIKeyEnv, "")
	os.Unsetenv(detector.DefaultAPIKeyEnv)
	confDir := t.TempDir()
	dotenv := filepath.Join(confDir, ".env")
	if err := os.WriteFile(dotenv, []byte("# the classifier's key\nexport OPENROUTER_API_KEY=\""+key+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cfg.LLM.LoadKey(confDir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{detector.DefaultAPIKeyEnv, "OPENROUTER_API_KEY"} {
		if v, ok := os.LookupEnv(name); ok {
			t.Fatalf("the key went into the daemon's environment as %s: %q", name, v)
		}
	}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	td, logs := startDaemonLog(t, cfg)

	var rt runtimeView
	script := `printf 'MODE=ready KEY=%s/%s\n' "${` + detector.DefaultAPIKeyEnv + `:-none}" "${OPENROUTER_API_KEY:-none}"; exec cat`
	if err := td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: "llm", Role: "ready", Agent: "odd", Dir: td.cfg.Panes.Roots[0],
		Argv: []string{"sh", "-c", script}}, &rt); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Readiness == nudge.Ready && r.Summary == "stand-in: ready" })
	if _, err := td.trigger(map[string]any{"trigger_id": "dotenv-1", "workspace": "llm", "agent": "ready", "prompt": "hello"}); err != nil {
		t.Fatal(err)
	}
	if got := td.waitTrigger("dotenv-1", closed); got.Result != nudge.ResultDelivered {
		t.Fatalf("receipt: %+v", got)
	}

	standIn.mu.Lock()
	auth, screen := standIn.auth, standIn.screens["ready"]
	standIn.mu.Unlock()
	if !auth["Bearer "+key] {
		t.Errorf("the .env key did not reach the classifier: Authorization headers %v", auth)
	}
	if !strings.Contains(screen, "MODE=ready KEY=none/none") {
		t.Errorf("the key reached the pane's environment: %q", screen)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "trigger outcome") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	out := logs.String()
	if strings.Contains(out, key) || strings.Contains(out, key[len(key)-8:]) {
		t.Errorf("the key is in the daemon's log")
	}
	found := false
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "[INFO]") && strings.Contains(line, "trigger outcome") && strings.Contains(line, "trigger_id=dotenv-1") &&
			strings.Contains(line, "result=delivered") && strings.Contains(line, "fallback_used=false") && strings.Contains(line, "runtime_id="+rt.RuntimeID) {
			found = true
		}
	}
	if !found {
		t.Errorf("no info line with the trigger's outcome in the log:\n%s", out)
	}
}
