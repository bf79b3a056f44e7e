package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/detector"
)

// llmStandIn is a loopback chat-completions endpoint that answers by the MODE=... line on
// the screen it is sent: ready and busy give that verdict, hang never answers, error
// answers 500, refused answers 401, invalid answers prose instead of a verdict. It records
// what it was sent.
type llmStandIn struct {
	srv  *httptest.Server
	stop chan struct{}

	mu       sync.Mutex
	auth     map[string]bool // Authorization headers seen
	models   map[string]bool
	screens  map[string]string // mode -> last screen sent
	requests map[string]int    // mode -> requests
	inflight map[string]int    // mode -> requests not answered yet
}

var modeRE = regexp.MustCompile(`MODE=(\w+)`)

func newLLMStandIn(t *testing.T) *llmStandIn {
	s := &llmStandIn{stop: make(chan struct{}), auth: map[string]bool{}, models: map[string]bool{},
		screens: map[string]string{}, requests: map[string]int{}, inflight: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve)) // 127.0.0.1
	t.Cleanup(func() { close(s.stop); s.srv.Close() })
	return s
}

func (s *llmStandIn) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	screen := req.Messages[len(req.Messages)-1].Content
	mode := "none"
	if m := modeRE.FindStringSubmatch(screen); m != nil {
		mode = m[1]
	}
	s.mu.Lock()
	s.auth[r.Header.Get("Authorization")] = true
	s.models[req.Model] = true
	s.screens[mode] = screen
	s.requests[mode]++
	s.inflight[mode]++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight[mode]--
		s.mu.Unlock()
	}()
	switch mode {
	case "hang":
		select {
		case <-r.Context().Done():
		case <-s.stop:
		}
		return
	case "error":
		http.Error(w, "stand-in failure", http.StatusInternalServerError)
		return
	case "refused":
		http.Error(w, "stand-in: bad key", http.StatusUnauthorized)
		return
	}
	verdict, _ := json.Marshal(map[string]any{"state": strings.ToUpper(mode), "summary": "stand-in: " + mode, "actions_needed": []string{}})
	if mode == "invalid" {
		verdict = []byte("It looks ready to me.")
	}
	resp, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": string(verdict)}}}})
	w.Header().Set("Content-Type", "application/json")
	w.Write(resp)
}

func (s *llmStandIn) count(mode string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[mode]
}

func (s *llmStandIn) pending(mode string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight[mode]
}

// Seed 002's LLM classifier wired to serve, end to end: panes whose screens the shell pack
// cannot classify (no prompt: BUSY, not confident) are sent to a loopback stand-in. Its
// READY lets a trigger through to an agent that does not queue input, its BUSY holds one;
// a stand-in that hangs or errors leaves the pack's verdict and never holds a trigger.
// The API key comes from the environment only, goes in the Authorization header, and
// reaches no pane.
func TestLLMClassifierServe(t *testing.T) {
	standIn := newLLMStandIn(t)
	cfg := newTestConfig(t)
	cfg.ProfileDir = t.TempDir()
	for name, queues := range map[string]bool{"odd": false, "oddq": true} {
		writeFile(t, filepath.Join(cfg.ProfileDir, name+".json"), `{"launch":["sh"],"allowed_launchers":["sh"],"pack":"shell",
			"queues_input":`+map[bool]string{true: "true", false: "false"}[queues]+`,"ack_signals":["marker","api"],"submitted_is_ack":true,"ready_quiet":"200ms"}`)
	}
	cfg.LLM.URL = standIn.srv.URL + "/v1/chat/completions"
	cfg.LLM.Model = "stand-in-model"
	cfg.LLM.Timeout = 10 * time.Minute // the hanging stand-in hangs for the whole test
	cfg.LLM.Retries = 0
	cfg.Inject.DeferRecheck = 300 * time.Millisecond
	t.Setenv(detector.DefaultAPIKeyEnv, "sk-standin-0123456789abcdef")
	if err := cfg.LLM.LoadKey(""); err != nil {
		t.Fatal(err)
	}
	if v, ok := os.LookupEnv(detector.DefaultAPIKeyEnv); ok {
		t.Fatalf("the key is still in the daemon's environment: %q", v)
	}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	td := startDaemon(t, cfg)

	spawn := func(agent, mode string) runtimeView {
		var rt runtimeView
		script := `printf 'MODE=` + mode + ` KEY=%s\n' "${` + detector.DefaultAPIKeyEnv + `:-none}"; exec cat`
		body := spawnBody{Workspace: "llm", Role: mode, Agent: agent, Dir: td.cfg.Panes.Roots[0], Argv: []string{"sh", "-c", script}}
		if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &rt); err != nil {
			t.Fatalf("spawn %s: %v", mode, err)
		}
		return rt
	}
	ready, busy := spawn("odd", "ready"), spawn("odd", "busy")
	hang, failing := spawn("oddq", "hang"), spawn("oddq", "error")
	// A screen that keeps changing (pausing 300 ms at a time, longer than the profile's
	// 200 ms ready_quiet: each pause is captured and not understood) never settles for
	// --llm-settle (2s): it is never sent.
	var stream runtimeView
	if err := td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: "llm", Role: "stream", Agent: "odd", Dir: td.cfg.Panes.Roots[0],
		Argv: []string{"sh", "-c", `i=0; while :; do i=$((i+1)); echo "MODE=stream $i"; sleep 0.3; done`}}, &stream); err != nil {
		t.Fatal(err)
	}

	td.waitRuntime(ready.RuntimeID, func(r runtimeView) bool { return r.Readiness == nudge.Ready && r.Summary == "stand-in: ready" })
	td.waitRuntime(busy.RuntimeID, func(r runtimeView) bool { return r.Readiness == nudge.Busy && r.Summary == "stand-in: busy" })
	for _, rt := range []runtimeView{hang, failing} {
		mode := rt.Role
		deadline := time.Now().Add(30 * time.Second)
		for standIn.count(mode) == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if standIn.count(mode) == 0 {
			t.Fatalf("the stand-in was never asked about the %s pane", mode)
		}
		// The pack's own verdict (BUSY: no shell prompt, not confident) stands, and is
		// published without waiting for the LLM: while the hanging request is in flight.
		td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool {
			return r.Readiness == nudge.Busy && r.Summary != "output" && !strings.HasPrefix(r.Summary, "stand-in")
		})
	}
	if n := standIn.pending("hang"); n != 1 {
		t.Fatalf("%d requests about the hanging pane in flight, want 1: the pack's verdict waited for the LLM", n)
	}

	// The LLM's READY lets a trigger through; its BUSY holds one.
	for _, c := range []struct{ agent, want string }{{"ready", "acked"}, {"hang", "acked"}, {"error", "acked"}} {
		if _, err := td.trigger(map[string]any{"trigger_id": "t-" + c.agent, "workspace": "llm", "agent": c.agent, "prompt": "hello " + c.agent}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := td.trigger(map[string]any{"trigger_id": "t-busy", "workspace": "llm", "agent": "busy", "prompt": "hello busy"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t-ready", "t-hang", "t-error"} {
		if got := td.waitTrigger(id, closed); got.State != nudge.StateAcked {
			t.Errorf("%s: %+v", id, got)
		}
	}
	held := td.waitTrigger("t-busy", func(tr nudge.Trigger) bool { return tr.State == nudge.StateDeferred || tr.Closed })
	if held.State != nudge.StateDeferred || held.ErrorCode != nudge.AgentBusy {
		t.Errorf("t-busy: %+v", held)
	}

	if n := standIn.count("stream"); n != 0 {
		t.Errorf("a screen that never settled was sent %d times", n)
	}
	if r := td.get(stream.RuntimeID); r.Readiness != nudge.Busy {
		t.Errorf("the streaming pane: %s %q", r.Readiness, r.Summary)
	}

	standIn.mu.Lock()
	defer standIn.mu.Unlock()
	if len(standIn.auth) != 1 || !standIn.auth["Bearer sk-standin-0123456789abcdef"] {
		t.Errorf("Authorization headers: %v", standIn.auth)
	}
	if len(standIn.models) != 1 || !standIn.models["stand-in-model"] {
		t.Errorf("models: %v", standIn.models)
	}
	if s := standIn.screens["ready"]; !strings.Contains(s, "MODE=ready KEY=none") {
		t.Errorf("the key reached the pane, or the screen was not sent: %q", s)
	}
}

// serve --help names the key's variable and has no flag for the key (the settings' checks
// are classifier's TestValidate).
func TestLLMHelpNamesKeyVariable(t *testing.T) {
	out, _ := runDoctorCLIHelp(t)
	if !strings.Contains(out, "-llm-url") || !strings.Contains(out, "$"+detector.DefaultAPIKeyEnv) || strings.Contains(out, "-llm-api-key") {
		t.Errorf("serve --help does not name the key's variable, or has a key flag:\n%s", out)
	}
}

func runDoctorCLIHelp(t *testing.T) (string, int) {
	t.Helper()
	var out lockedBuffer
	env := &cliEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &out, getenv: os.Getenv}
	code := run(t0(), env, []string{"serve", "--help"})
	return out.String(), code
}
