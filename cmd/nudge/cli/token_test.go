package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
)

// issue runs `nudge token issue` in-process as the daemon's uid and returns the token.
func (td *testDaemon) issue(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := td.runCLI(append([]string{"token", "issue"}, args...)...)
	if code != 0 {
		t.Fatalf("token issue %v: exit %d: %s", args, code, errOut)
	}
	return strings.TrimSpace(out)
}

// wantAPIError checks err is the JSON error code with a message holding msg.
func wantAPIError(t *testing.T, what string, err error, code, msg string) {
	t.Helper()
	var ae *api.Error
	if !errors.As(err, &ae) || string(ae.ErrorCode) != code || !strings.Contains(ae.Message, msg) {
		t.Fatalf("%s: got %v, want %s containing %q", what, err, code, msg)
	}
}

func (td *testDaemon) as(tok string) *client { return newClient(td.cfg.Socket, tok) }

func bg() context.Context { return context.Background() }

func TestTokenKeyFile(t *testing.T) {
	cfg := newTestConfig(t)
	td := startDaemon(t, cfg)
	fi, err := os.Stat(filepath.Join(cfg.StateDir, "token.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi.Mode(), err)
	}
	td.stop()
	if err := os.Chmod(filepath.Join(cfg.StateDir, "token.key"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cfg.CheckAuth(); err == nil || !strings.Contains(err.Error(), "0600") {
		t.Fatalf("a group-readable key was accepted: %v", err)
	}
}

func TestTokenScopes(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rawCat(t, td, "mobile_core", "rev")
	rawCat(t, td, "other", "rev")
	tok := td.issue(t, "--subject", "orchestrator", "--workspace", "mobile_core", "--verbs", "trigger,spawn", "--ttl", "24h")
	orch := td.as(tok)

	var tr nudge.Trigger
	if err := orch.do(bg(), "POST", "/v1/triggers", map[string]any{"trigger_id": "ok-1", "workspace": "mobile_core", "agent": "rev", "prompt": "hi"}, &tr); err != nil {
		t.Fatalf("in-scope trigger: %v", err)
	}
	if !strings.HasPrefix(tr.Caller, "orchestrator#") {
		t.Fatalf("trigger caller %q", tr.Caller)
	}
	err := orch.do(bg(), "POST", "/v1/triggers", map[string]any{"trigger_id": "no-1", "workspace": "other", "agent": "rev", "prompt": "hi"}, nil)
	wantAPIError(t, "other workspace", err, "FORBIDDEN", `may not act on workspace "other"`)
	err = orch.do(bg(), "POST", "/v1/runtimes/rt_mobile_core.rev/pause", nil, nil)
	wantAPIError(t, "admin verb", err, "FORBIDDEN", "may not admin")
	err = orch.do(bg(), "POST", "/v1/tokens", issueBody{Subject: "x", Workspaces: []string{"mobile_core"}, Verbs: []string{"trigger"}}, nil)
	wantAPIError(t, "issue without admin", err, "FORBIDDEN", "may not admin")
	// A trigger id used by another workspace is not shown to this caller.
	if _, err := td.trigger(map[string]any{"trigger_id": "taken", "workspace": "other", "agent": "rev", "prompt": "secret"}); err != nil {
		t.Fatal(err)
	}
	err = orch.do(bg(), "POST", "/v1/triggers", map[string]any{"trigger_id": "taken", "workspace": "mobile_core", "agent": "rev", "prompt": "hi"}, nil)
	wantAPIError(t, "foreign trigger id", err, "CONFLICT", "already used")
	var list []runtimeView
	if err := orch.do(bg(), "GET", "/v1/runtimes", nil, &list); err != nil || len(list) != 1 || list[0].WorkspaceID != "mobile_core" {
		t.Fatalf("scoped list: %v %+v", err, list)
	}

	// Tampered, expired, garbage.
	b := []byte(tok)
	b[12] ^= 2
	wantAPIError(t, "tampered", td.as(string(b)).do(bg(), "GET", "/v1/runtimes", nil, nil), "UNAUTHORIZED", "token refused")
	now := time.Now()
	old, err := td.d.Rooms().Auth.Sign(auth.Claims{ID: auth.NewID(), Subject: "orchestrator", Workspaces: []string{"*"}, Verbs: []string{"admin"},
		IssuedAt: now.Add(-2 * time.Hour).Unix(), ExpiresAt: now.Add(-time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, "expired", td.as(old).do(bg(), "GET", "/v1/runtimes", nil, nil), "UNAUTHORIZED", "token expired")
	wantAPIError(t, "garbage", td.as("hunter2").do(bg(), "GET", "/v1/runtimes", nil, nil), "UNAUTHORIZED", "malformed token")

	// A scoped admin cannot mint a broader token.
	adm := td.as(td.issue(t, "--subject", "ops", "--workspace", "mobile_core", "--verbs", "admin,trigger", "--ttl", "1h"))
	err = adm.do(bg(), "POST", "/v1/tokens", issueBody{Subject: "x", Workspaces: []string{"*"}, Verbs: []string{"trigger"}}, nil)
	wantAPIError(t, "broader workspace", err, "FORBIDDEN", "cannot grant workspace *")
	err = adm.do(bg(), "POST", "/v1/tokens", issueBody{Subject: "x", Workspaces: []string{"mobile_core"}, Verbs: []string{"spawn"}}, nil)
	wantAPIError(t, "broader verb", err, "FORBIDDEN", "cannot grant verb spawn")
	err = adm.do(bg(), "POST", "/v1/tokens", issueBody{Subject: "x", Workspaces: []string{"mobile_core"}, Verbs: []string{"trigger"}, TTL: "48h"}, nil)
	wantAPIError(t, "longer ttl", err, "FORBIDDEN", "outlives")
	err = adm.do(bg(), "POST", "/v1/tokens/rotate-key", nil, nil)
	wantAPIError(t, "scoped rotate", err, "FORBIDDEN", "all workspaces")

	// Revocation is immediate.
	cl, _ := auth.Peek(tok)
	if out, errOut, code := td.runCLI("token", "list"); code != 0 || !strings.Contains(out, cl.ID) || !strings.Contains(out, "valid") {
		t.Fatalf("token list: %d %s %s", code, out, errOut)
	}
	if _, errOut, code := td.runCLI("token", "revoke", cl.ID); code != 0 {
		t.Fatalf("revoke: %s", errOut)
	}
	err = orch.do(bg(), "GET", "/v1/runtimes", nil, nil)
	wantAPIError(t, "revoked", err, "UNAUTHORIZED", "revoked")
	if out, _, _ := td.runCLI("token", "list"); !strings.Contains(out, "revoked") {
		t.Fatalf("list after revoke:\n%s", out)
	}

	// Rotating the key invalidates every token.
	if err := adm.do(bg(), "GET", "/v1/runtimes", nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := td.runCLI("token", "rotate-key"); code != 0 {
		t.Fatalf("rotate: %s", errOut)
	}
	wantAPIError(t, "rotated", adm.do(bg(), "GET", "/v1/runtimes", nil, nil), "UNAUTHORIZED", "signature")
}

func TestRequireToken(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.Auth.RequireToken = true
	td := startDaemon(t, cfg)
	wantAPIError(t, "tokenless", td.c.do(bg(), "GET", "/v1/runtimes", nil, nil), "UNAUTHORIZED", "a token is required")
	// The operator mints one with the key (as `nudge token issue` would need a token here).
	now := time.Now()
	tok, err := td.d.Rooms().Auth.Sign(auth.Claims{ID: auth.NewID(), Subject: "ops", Workspaces: []string{"*"}, Verbs: []string{"read"},
		IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if err := td.as(tok).do(bg(), "GET", "/v1/runtimes", nil, nil); err != nil {
		t.Fatalf("with token: %v", err)
	}
}

// paneEnv reads a variable from a pane process's environment.
func paneEnv(t *testing.T, pid int, key string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	t.Fatalf("pid %d has no %s", pid, key)
	return ""
}

func TestRuntimeTokens(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	a, _ := rawCat(t, td, "w1", "alpha")
	b, _ := rawCat(t, td, "w1", "beta")
	if got := paneEnv(t, a.PID, "NUDGE_RUNTIME_ID"); got != a.RuntimeID {
		t.Fatalf("NUDGE_RUNTIME_ID %q", got)
	}
	if got := paneEnv(t, a.PID, "NUDGE_SOCKET"); got != td.cfg.Socket {
		t.Fatalf("NUDGE_SOCKET %q", got)
	}
	ta, tb := td.as(paneEnv(t, a.PID, "NUDGE_RUNTIME_TOKEN")), td.as(paneEnv(t, b.PID, "NUDGE_RUNTIME_TOKEN"))

	for _, rt := range []runtimeView{a, b} {
		id := "for-" + rt.Role
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "w1", "agent": rt.Role, "prompt": "hi"}); err != nil {
			t.Fatal(err)
		}
		td.waitTrigger(id, closed)
	}
	if err := ta.do(bg(), "POST", "/v1/triggers/for-alpha/ack", nil, nil); err != nil {
		t.Fatalf("own ack: %v", err)
	}
	wantAPIError(t, "other's ack", ta.do(bg(), "POST", "/v1/triggers/for-beta/ack", nil, nil), "FORBIDDEN", "belongs to another runtime")
	if err := ta.do(bg(), "POST", "/v1/runtimes/"+a.RuntimeID+"/heartbeat", heartbeatBody{Cursor: "c1"}, nil); err != nil {
		t.Fatalf("own heartbeat: %v", err)
	}
	wantAPIError(t, "other's heartbeat", ta.do(bg(), "POST", "/v1/runtimes/"+b.RuntimeID+"/heartbeat", heartbeatBody{}, nil), "FORBIDDEN", "may not act on runtime "+b.RuntimeID)
	wantAPIError(t, "runtime triggers", ta.do(bg(), "POST", "/v1/triggers", map[string]any{"workspace": "w1", "agent": "beta", "prompt": "x"}, nil), "FORBIDDEN", "may not trigger")
	wantAPIError(t, "runtime stops", ta.do(bg(), "POST", "/v1/runtimes/"+b.RuntimeID+"/stop", nil, nil), "FORBIDDEN", "may not spawn")

	// `nudge heartbeat` inside the pane picks the token and the runtime id up itself.
	env := map[string]string{"NUDGE_SOCKET": td.cfg.Socket, "NUDGE_RUNTIME_ID": b.RuntimeID, "NUDGE_RUNTIME_TOKEN": paneEnv(t, b.PID, "NUDGE_RUNTIME_TOKEN")}
	if out, errOut, code := runWithEnv(env, "heartbeat", "--cursor", "c9"); code != 0 || !strings.Contains(out, `"cursor_advanced"`) {
		t.Fatalf("nudge heartbeat in pane: %d %s %s", code, out, errOut)
	}
	if _, errOut, code := runWithEnv(env, "ack", "for-alpha"); code == 0 || !strings.Contains(errOut, "FORBIDDEN") {
		t.Fatalf("nudge ack of another runtime's trigger: %d %s", code, errOut)
	}

	// Deregistering revokes at once.
	if err := td.c.do(bg(), "DELETE", "/v1/runtimes/"+b.RuntimeID, nil, nil); err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, "deregistered", tb.do(bg(), "GET", "/v1/runtimes", nil, nil), "UNAUTHORIZED", "deregistered")
	if err := ta.do(bg(), "GET", "/v1/runtimes", nil, nil); err != nil {
		t.Fatalf("the other runtime's token: %v", err)
	}
}

// runWithEnv runs the CLI in-process with exactly env as its environment.
func runWithEnv(env map[string]string, args ...string) (string, string, int) {
	var out, errb strings.Builder
	e := &cliEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
	code := run(bg(), e, args)
	return out.String(), errb.String(), code
}

func TestRuntimeTokenRenewal(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.Auth.RuntimeTokenTTL = 3 * time.Second
	td := startDaemon(t, cfg)
	a, _ := rawCat(t, td, "w1", "alpha")
	first := paneEnv(t, a.PID, "NUDGE_RUNTIME_TOKEN")
	var renewed string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out, err := tmuxOut(td, "show-options", "-p", "-q", "-v", "-t", a.PaneID, auth.RuntimeTokenOption)
		if v := strings.TrimSpace(out); err == nil && v != "" && v != first {
			renewed = v
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if renewed == "" {
		t.Fatal("the runtime token was never renewed into the pane's option")
	}
	// The pane's own copy expires; a client inside the pane finds the renewed one.
	for time.Now().Before(deadline) && td.as(first).do(bg(), "GET", "/v1/runtimes", nil, nil) == nil {
		time.Sleep(100 * time.Millisecond)
	}
	wantAPIError(t, "expired pane token", td.as(first).do(bg(), "GET", "/v1/runtimes", nil, nil), "UNAUTHORIZED", "expired")
	sock := strings.TrimSpace(td.tmux("display-message", "-p", "-t", "=agents_w1:", "#{socket_path}"))
	env := map[string]string{"NUDGE_SOCKET": td.cfg.Socket, "NUDGE_RUNTIME_ID": a.RuntimeID, "NUDGE_RUNTIME_TOKEN": first,
		"TMUX": sock + ",1,0", "TMUX_PANE": a.PaneID}
	if out, errOut, code := runWithEnv(env, "heartbeat"); code != 0 {
		t.Fatalf("heartbeat with the renewed token: %d %s %s", code, out, errOut)
	}
}

func tmuxOut(td *testDaemon, args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", td.cfg.Panes.SocketName}, args...)...).Output()
	return string(out), err
}
