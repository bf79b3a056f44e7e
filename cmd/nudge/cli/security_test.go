package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/api"

	"github.com/nudgehq/nudge/store"
)

// buildSecNudge builds the nudge binary into a world-readable temp dir.
func buildSecNudge(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "nudge")
	if out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// asNobody runs the nudge client as uid/gid 65534.
func asNobody(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", bin}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("setpriv: %v", err)
	}
	return string(out), code
}

func TestOtherUIDRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another uid (setpriv --reuid=65534)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv not installed")
	}
	bin := buildSecNudge(t)
	cfg := newTestConfig(t)
	td := startDaemon(t, cfg)
	if err := os.Chmod(filepath.Dir(cfg.Socket), 0o711); err != nil {
		t.Fatal(err)
	}
	// The normal 0600 socket: the kernel refuses the connect.
	out, code := asNobody(t, bin, "ls", "--socket", cfg.Socket)
	if code != 1 || !strings.Contains(out, "permission denied") {
		t.Fatalf("0600 socket: exit %d: %s", code, out)
	}
	// A socket opened up by mistake: the daemon's peer-credential check refuses.
	if err := os.Chmod(cfg.Socket, 0o666); err != nil {
		t.Fatal(err)
	}
	out, code = asNobody(t, bin, "ls", "--socket", cfg.Socket)
	if code != 1 || !strings.Contains(out, "FORBIDDEN: peer uid 65534 is not allowed") {
		t.Fatalf("0666 socket: exit %d: %s", code, out)
	}
	out, code = asNobody(t, bin, "deregister", "--socket", cfg.Socket, "rt_w1.rev")
	if code != 1 || !strings.Contains(out, "FORBIDDEN") {
		t.Fatalf("trigger from uid 65534: exit %d: %s", code, out)
	}
	recs, err := td.d.Rooms().DB.AuditLog().Audit(store.AuditFilter{Event: "api_refused"})
	if err != nil || len(recs) == 0 || recs[len(recs)-1].PeerUID == nil || *recs[len(recs)-1].PeerUID != 65534 {
		t.Fatalf("refusal not audited with the peer uid: %v %+v", err, recs)
	}

	// --allow-uid admits the uid, but only with a token.
	td.stop()
	cfg2 := newTestConfig(t)
	cfg2.Auth.AllowUIDs = []int{65534}
	td2 := startDaemon(t, cfg2)
	os.Chmod(filepath.Dir(cfg2.Socket), 0o711)
	os.Chmod(cfg2.Socket, 0o666)
	out, code = asNobody(t, bin, "ls", "--socket", cfg2.Socket)
	if code != 1 || !strings.Contains(out, "UNAUTHORIZED: a token is required") {
		t.Fatalf("allowed uid without token: exit %d: %s", code, out)
	}
	tok := td2.issue(t, "--subject", "ci", "--workspace", "w1", "--verbs", "read", "--ttl", "1h")
	out, code = asNobody(t, bin, "ls", "--socket", cfg2.Socket, "--token", tok)
	if code != 0 || !strings.Contains(out, "RUNTIME") {
		t.Fatalf("allowed uid with token: exit %d: %s", code, out)
	}
}

func TestPolicy(t *testing.T) {
	cfg := newTestConfig(t)
	root := cfg.Panes.Roots[0]
	allowed, other := filepath.Join(root, "allowed"), filepath.Join(root, "other")
	for _, d := range []string{allowed, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(other, filepath.Join(allowed, "escape")); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(t.TempDir(), "policy.json")
	write := func(v any) {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(pol, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(map[string]any{"workspaces": map[string]any{"w1": map[string]any{"dirs": []string{"/"}}}})
	cfg.Auth.PolicyFile = pol
	if err := cfg.CheckAuth(); err == nil || !strings.Contains(err.Error(), "not under any --root") {
		t.Fatalf("a policy dir outside the roots was accepted: %v", err)
	}
	write(map[string]any{"workspaces": map[string]any{
		"w1": map[string]any{"dirs": []string{allowed}, "profiles": []string{"shell"}, "launchers": []string{"cat", "sh"}, "rate": "2/h"},
		"*":  map[string]any{"profiles": []string{"claude"}},
	}})
	td := startDaemon(t, cfg)
	spawn := func(b spawnBody) error {
		b.Workspace = "w1"
		if b.Agent == "" {
			b.Agent = "shell"
		}
		if b.Role == "" {
			b.Role = "r"
		}
		return td.c.do(bg(), "POST", "/v1/runtimes", b, nil)
	}
	wantAPIError(t, "dir outside", spawn(spawnBody{Dir: other, Argv: []string{"cat"}}), "FORBIDDEN", "outside workspace w1's allowed dirs ("+allowed+"): add it to the workspace's \"dirs\" in the policy file")
	wantAPIError(t, "dotdot", spawn(spawnBody{Dir: allowed + "/../other", Argv: []string{"cat"}}), "BAD_REQUEST", "'..'")
	wantAPIError(t, "symlink out", spawn(spawnBody{Dir: filepath.Join(allowed, "escape"), Argv: []string{"cat"}}), "FORBIDDEN", "resolved "+other)
	wantAPIError(t, "profile", spawn(spawnBody{Agent: "codex", Dir: allowed}), "FORBIDDEN", `may not run profile "codex"`)
	wantAPIError(t, "launcher", spawn(spawnBody{Dir: allowed, Argv: []string{"bash"}}), "FORBIDDEN", `may not launch "bash"`)
	wantAPIError(t, "launcher on another host", spawn(spawnBody{Dir: allowed, Argv: []string{"/tmp/cat"}, Host: "box"}), "FORBIDDEN", `may not launch "/tmp/cat" on host box`)
	wantAPIError(t, "profile launchers", spawn(spawnBody{Dir: allowed, Argv: []string{"/usr/bin/python3"}}), "FORBIDDEN", "python3")
	wantAPIError(t, "unlisted workspace", td.c.do(bg(), "POST", "/v1/runtimes", spawnBody{Workspace: "w2", Role: "r", Agent: "shell"}, nil), "FORBIDDEN", `may not run profile "shell"`)
	// A first prompt read from a file of another workspace (then typed, on the agent's
	// screen and in its record): refused like a directory outside the dirs.
	secret := filepath.Join(other, "secret.txt")
	if err := os.WriteFile(secret, []byte("another workspace's secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, "prompt file outside", spawn(spawnBody{Dir: allowed, Argv: []string{"cat"}, PromptFile: secret}), "FORBIDDEN",
		"prompt file "+secret+" (resolved "+secret+") is outside workspace w1's allowed dirs")
	wantAPIError(t, "prompt file through a link", spawn(spawnBody{Dir: allowed, Argv: []string{"cat"}, PromptFile: filepath.Join(allowed, "escape", "secret.txt")}), "FORBIDDEN",
		"resolved "+secret)
	if out, _ := tmuxOut(td, "list-sessions"); out != "" {
		t.Fatalf("refused spawns created sessions: %s", out)
	}
	var rt runtimeView
	if err := td.c.do(bg(), "POST", "/v1/runtimes", spawnBody{Workspace: "w1", Role: "r", Agent: "shell", Argv: []string{"cat"}}, &rt); err != nil {
		t.Fatalf("allowed spawn: %v", err)
	}
	if rt.Dir != allowed {
		t.Fatalf("spawned in %q, want the policy's first dir %q", rt.Dir, allowed)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	for i := range 3 {
		_, err := td.trigger(map[string]any{"trigger_id": fmt.Sprintf("rate-%d", i), "workspace": "w1", "agent": "r", "thread_id": fmt.Sprintf("t%d", i), "prompt": "hi"})
		if i < 2 && err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		if i == 2 {
			wantAPIError(t, "workspace rate", err, "TRIGGER_RATE_LIMITED", "policy rate of 2")
		}
	}
}

// hostileBodies are requests that must be refused before anything reaches tmux.
var hostileBodies = []struct {
	name, path string
	body       any
	code       string
}{
	{"TriggerIDSemicolon", "/v1/triggers", map[string]any{"trigger_id": "a; kill-server", "workspace": "w1", "agent": "cat", "prompt": "x"}, "BAD_REQUEST"},
	{"TriggerIDNewline", "/v1/triggers", map[string]any{"trigger_id": "a\nkill-server", "workspace": "w1", "agent": "cat", "prompt": "x"}, "BAD_REQUEST"},
	{"TriggerIDFormat", "/v1/triggers", map[string]any{"trigger_id": "#{pane_id}", "workspace": "w1", "agent": "cat", "prompt": "x"}, "BAD_REQUEST"},
	{"ThreadIDShell", "/v1/triggers", map[string]any{"thread_id": "$(touch PWNED)", "workspace": "w1", "agent": "cat", "prompt": "x"}, "BAD_REQUEST"},
	{"ThreadIDQuote", "/v1/triggers", map[string]any{"thread_id": "t' ; new-window '", "workspace": "w1", "agent": "cat", "prompt": "x"}, "BAD_REQUEST"},
	{"WorkspaceFormat", "/v1/triggers", map[string]any{"workspace": "w1:#{session_name}", "agent": "cat", "prompt": "x"}, "BAD_REQUEST"},
	{"AgentEscape", "/v1/triggers", map[string]any{"workspace": "w1", "agent": "cat\x1b]0;x\x07", "prompt": "x"}, "BAD_REQUEST"},
	{"Oversize", "/v1/triggers", map[string]any{"workspace": "w1", "agent": "cat", "prompt": strings.Repeat("a", 64<<10+1)}, "PAYLOAD_REJECTED"},
	{"OnlyControls", "/v1/triggers", map[string]any{"workspace": "w1", "agent": "cat", "prompt": "\x00\x1b\x07"}, "PAYLOAD_REJECTED"},
	{"BodyOver1MiB", "/v1/triggers", map[string]any{"workspace": "w1", "agent": "cat", "prompt": strings.Repeat("b", 1<<20)}, "PAYLOAD_REJECTED"},
	{"CallerInBody", "/v1/triggers", map[string]any{"workspace": "w1", "agent": "cat", "prompt": "x", "caller": "root"}, "BAD_REQUEST"},
	{"SpawnWorkspace", "/v1/runtimes", spawnBody{Workspace: "w1;new-session", Role: "r", Agent: "shell"}, "BAD_REQUEST"},
	{"SpawnRoleFormat", "/v1/runtimes", spawnBody{Workspace: "w1", Role: "#{pane_pid}", Agent: "shell"}, "BAD_REQUEST"},
	{"SpawnSessionID", "/v1/runtimes", spawnBody{Workspace: "w1", Role: "s", Agent: "shell", SessionID: "x'; run-shell 'touch PWNED"}, "BAD_REQUEST"},
	{"SpawnArgvEnv", "/v1/runtimes", spawnBody{Workspace: "w1", Role: "s", Agent: "shell", Argv: []string{"X=1", "sh"}}, "BAD_REQUEST"},
	{"SpawnDirDotDot", "/v1/runtimes", spawnBody{Workspace: "w1", Role: "s", Agent: "shell", Dir: "/tmp/../etc"}, "BAD_REQUEST"},
	{"RegisterTargetCommand", "/v1/runtimes/register", registerBody{Workspace: "w1", Role: "s", Agent: "shell", Target: "agents_w1:cat.0; kill-server"}, ""},
	{"RegisterTargetOtherSession", "/v1/runtimes/register", registerBody{Workspace: "w1", Role: "s", Agent: "shell", Target: "=other:0.0"}, ""},
}

func TestHostileAPIInputs(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	root := td.cfg.Panes.Roots[0]
	rt := td.spawnShell("w1", "cat", "cat", "-v")
	before := func() string {
		return td.tmux("list-sessions", "-F", "#{session_name}") + td.tmux("list-windows", "-a", "-F", "#{window_id}") + td.tmux("list-buffers")
	}
	start := before()
	for _, tc := range hostileBodies {
		t.Run(tc.name, func(t *testing.T) {
			err := td.c.do(bg(), "POST", tc.path, tc.body, nil)
			if err == nil {
				t.Fatalf("accepted")
			}
			if ae, ok := err.(*api.Error); !ok || (tc.code != "" && string(ae.ErrorCode) != tc.code) {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
		})
	}
	// Raw bodies: invalid UTF-8, NUL outside strings, not an object.
	for i, raw := range []string{"{\"workspace\":\"w1\",\"agent\":\"cat\",\"prompt\":\"\xff\xfe\"}", "{\"workspace\":\"w1\x00\"}", "null", "[]", "{} {}"} {
		resp, err := rawPost(td, "/v1/triggers", raw)
		if err != nil || (resp != http.StatusBadRequest && i > 0) {
			t.Fatalf("raw #%d: status %d %v", i, resp, err)
		}
	}

	// Prompts: each reaches the pane as its sanitized text, and nothing else happens.
	prompts := []string{
		"a; kill-server; new-window",
		"line one\nline two\r\nnew-window",
		"#{pane_id} #(touch PWNED) #[fg=red]",
		"$(touch PWNED) `touch PWNED` ${HOME}",
		`'single' "double" \' \"`,
		"nul\x00esc\x1b[2Jbel\x07 c1\u009b31m",
		"bad utf8 \xff\xfe\xc2 end",
	}
	for i, p := range prompts {
		id := fmt.Sprintf("hostile-%d", i)
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "w1", "agent": "cat", "prompt": p}); err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		if tr := td.waitTrigger(id, closed); tr.State != "acked" {
			t.Fatalf("#%d: receipt %+v", i, tr)
		}
	}
	screen := waitScreen(t, td, rt.PaneID, "hostile-6")
	for i, p := range prompts {
		want := strings.Fields(expectTyped(fmt.Sprintf("hostile-%d", i), "", "", p))
		flat := strings.Join(strings.Fields(screen), " ")
		if !strings.Contains(flat, strings.Join(want, " ")) {
			t.Errorf("#%d: pane does not show %q literally:\n%s", i, strings.Join(want, " "), screen)
		}
	}
	if strings.Contains(screen, "^[") || strings.Contains(screen, "^@") {
		t.Errorf("a control byte reached the pane (cat -v shows it):\n%s", screen)
	}
	if _, err := os.Stat(filepath.Join(root, "PWNED")); err == nil {
		t.Fatal("a payload ran a shell command")
	}
	if after := before(); after != start {
		t.Fatalf("tmux state changed:\nbefore %q\nafter  %q", start, after)
	}
}

func rawPost(td *testDaemon, path, body string) (int, error) {
	resp, err := td.c.postRaw(path, body)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// waitScreen polls a pane's joined history until it holds want.
func waitScreen(t *testing.T, td *testDaemon, pane, want string) string {
	t.Helper()
	var s string
	for range 400 {
		s = td.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", pane)
		if strings.Count(s, want) >= 2 { // tty echo, then cat -v's copy
			return s
		}
		sleepPoll()
	}
	t.Fatalf("pane never showed %q:\n%s", want, s)
	return s
}

func TestAuditShowsSubjects(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rt := td.spawnShell("w1", "rev", "cat")
	tok := td.issue(t, "--subject", "orchestrator", "--workspace", "w1", "--verbs", "trigger,ack", "--ttl", "1h")
	if err := td.as(tok).do(bg(), "POST", "/v1/triggers", map[string]any{"trigger_id": "aud-1", "workspace": "w1", "agent": "rev", "prompt": "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	td.waitTrigger("aud-1", closed)
	if err := td.as(tok).do(bg(), "POST", "/v1/triggers/aud-1/ack", nil, nil); err != nil {
		t.Fatal(err)
	}
	td.as(tok).do(bg(), "DELETE", "/v1/runtimes/"+rt.RuntimeID, nil, nil) // refused: no spawn verb
	out, errOut, code := td.runCLI("audit")
	if code != 0 {
		t.Fatalf("audit: %s", errOut)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		ev := f[3]
		if strings.HasPrefix(ev, "api_") || strings.HasPrefix(ev, "token_") || ev == "trigger_received" {
			if !strings.Contains(line, "subject=") || !strings.Contains(line, "uid=") {
				t.Errorf("no subject/uid: %s", line)
			}
			seen[ev] = true
		}
		if ev == "trigger_received" && !strings.Contains(line, "subject=orchestrator#") {
			t.Errorf("trigger not attributed to the token: %s", line)
		}
	}
	for _, ev := range []string{"api_spawn", "token_issued", "trigger_received", "api_ack", "api_refused"} {
		if !seen[ev] {
			t.Errorf("audit has no %s:\n%s", ev, out)
		}
	}
}
func sleepPoll() { time.Sleep(50 * time.Millisecond) }

// TestPromptFileOfAnotherWorkspace: a token of workspace w1, held by the policy to w1's
// dirs, spawns with a first prompt read from a file of another workspace's directory.
// The daemon reads it with its own rights and types it into the new agent, whose screen
// the token may read: refused; a file in w1's own dirs is typed.
func TestPromptFileOfAnotherWorkspace(t *testing.T) {
	cfg := newTestConfig(t)
	root := cfg.Panes.Roots[0]
	mine, theirs := filepath.Join(root, "mine"), filepath.Join(root, "theirs")
	for _, d := range []string{mine, theirs} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg.ProfileDir = t.TempDir()
	b, _ := json.Marshal(map[string]any{"name": "peek", "launch": []string{"cat"}, "allowed_launchers": []string{"cat"},
		"prompt_arg": "append", "pack": "shell", "submit_settle": "0s", "queues_input": true,
		"ack_signals": []string{"marker", "api"}, "submitted_is_ack": true, "ready_on": "alive"})
	os.WriteFile(filepath.Join(cfg.ProfileDir, "peek.json"), b, 0o644)
	pol := filepath.Join(t.TempDir(), "policy.json")
	pb, _ := json.Marshal(map[string]any{"workspaces": map[string]any{"w1": map[string]any{"dirs": []string{mine}, "profiles": []string{"peek"}}}})
	os.WriteFile(pol, pb, 0o600)
	cfg.Auth.PolicyFile = pol
	td := startDaemon(t, cfg)
	c := td.as(td.issue(t, "--subject", "w1-bot", "--workspace", "w1", "--verbs", "spawn,read", "--ttl", "1h"))
	secret := fmt.Sprintf("THEIR-SECRET-%d", time.Now().UnixNano())
	theirFile := filepath.Join(theirs, "notes.txt")
	os.WriteFile(theirFile, []byte(secret+"\n"), 0o600)
	var rt runtimeView
	err := c.do(bg(), "POST", "/v1/runtimes", spawnBody{Workspace: "w1", Role: "a", Agent: "peek", Dir: mine, PromptFile: theirFile}, &rt)
	wantAPIError(t, "their file", err, "FORBIDDEN", "is outside workspace w1's allowed dirs")
	if rt.RuntimeID != "" {
		time.Sleep(time.Second) // the typed first prompt, if it went
		var tail struct{ Lines []string }
		c.do(bg(), "GET", "/v1/runtimes/"+rt.RuntimeID+"/tail?lines=50", nil, &tail)
		t.Fatalf("spawned %s; its screen: %q", rt.RuntimeID, tail.Lines)
	}
	mineFile := filepath.Join(mine, "task.txt")
	os.WriteFile(mineFile, []byte("my own task\n"), 0o600)
	if err := c.do(bg(), "POST", "/v1/runtimes", spawnBody{Workspace: "w1", Role: "b", Agent: "peek", Dir: mine, PromptFile: mineFile}, &rt); err != nil {
		t.Fatalf("a file of w1's own: %v", err)
	}
}
