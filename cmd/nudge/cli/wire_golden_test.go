package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
)

var updateWire = flag.Bool("update-wire", false, "rewrite testdata/wire/*.txt from a live daemon")

// wireClient is a raw HTTP client on the daemon's socket: it keeps the status, the
// Content-Type and the body bytes exactly as the daemon sent them.
type wireClient struct {
	t    *testing.T
	http *http.Client
}

func newWire(t *testing.T, socket string) *wireClient {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &wireClient{t: t, http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// call sends one request and returns the answer as text: the status line, the
// Content-Type and the body.
func (w *wireClient) call(method, path, token, body string) (status int, text string, raw []byte) {
	w.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://nudge"+path, rd)
	if err != nil {
		w.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := w.http.Do(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err = io.ReadAll(resp.Body)
	if err != nil {
		w.t.Fatal(err)
	}
	return resp.StatusCode, fmt.Sprintf("%s %s\n%d %s\n%s", method, path, resp.StatusCode, resp.Header.Get("Content-Type"), raw), raw
}

// wireNormaliser blanks what differs between runs (times, pids, pane ids, paths,
// random ids, hashes) and leaves every name, layout byte and fixed value alone.
type wireNormaliser struct{ repl []func(string) string }

func (n *wireNormaliser) literal(old, new string) {
	if old != "" {
		n.repl = append(n.repl, func(s string) string { return strings.ReplaceAll(s, old, new) })
	}
}

func (n *wireNormaliser) re(expr, new string) {
	re := regexp.MustCompile(expr)
	n.repl = append(n.repl, func(s string) string { return re.ReplaceAllString(s, new) })
}

func (n *wireNormaliser) apply(s string) string {
	for _, f := range n.repl {
		s = f(s)
	}
	return s
}

func newWireNormaliser(cfg daemon.Config) *wireNormaliser {
	n := &wireNormaliser{}
	n.literal(cfg.Panes.Roots[0], "<root>")
	n.literal(cfg.Socket, "<socket>") // /v1/health's paths
	n.literal(cfg.StateDir, "<state>")
	n.literal(cfg.Panes.SocketName, "<tmux>")
	uid := strconv.Itoa(os.Geteuid())
	n.re(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"`, `"<time>"`)
	n.re(`"(pid|seq)": \d+`, `"$1": <n>`)
	n.re(`"(caller_uid|peer_uid)": `+uid+`\b`, `"$1": <uid>`)
	n.re(`uid:`+uid+`\b`, `uid:<uid>`)
	n.re(`%\d+\b`, `%<n>`)
	n.re(`"(iat|exp)": \d+`, `"$1": <n>`)
	n.re(`"[#$]"`, `"<prompt>"`) // the shell's prompt: # for root, $ for others
	n.re(`idle: [#$]"`, `idle: <prompt>"`)
	n.re(`"(hash|prev_hash)": "[0-9a-f]*"`, `"$1": "<hash>"`)
	n.re(`"version": "[^"]*"`, `"version": "<version>"`)
	n.re(`,\n\s*"degraded": \[[^\]]*\]`, ``) // health's tmux: what differs per tmux version
	n.re(`nudge1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`, `<token>`)
	n.re(`\b[0-9a-f]{24}\b`, `<id>`)
	n.re(`#[0-9a-f]{8}\b`, `#<id8>`)
	n.re(`sch_[A-Za-z0-9_-]+`, `sch_<id>`)
	return n
}

// TestWireGolden pins the socket API's answers, byte for byte up to the volatile fields,
// against a real daemon: status codes, the error body, health, runtimes, spawn and
// register, triggers with their receipts and list, ack, tail, audit, schedules and
// tokens. The files under testdata/wire were written before the daemon was split into
// packages; go test -run TestWireGolden -update-wire rewrites them.
func TestWireGolden(t *testing.T) {
	cfg := newTestConfig(t)
	td := startDaemon(t, cfg)
	w := newWire(t, cfg.Socket)
	norm := newWireNormaliser(cfg)
	got := map[string]string{}
	var order []string
	pin := func(name, method, path, token, body string) []byte {
		t.Helper()
		_, text, raw := w.call(method, path, token, body)
		got[name] = norm.apply(text)
		order = append(order, name)
		return raw
	}
	waitFor := func(path string, ok func(map[string]any) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			_, _, raw := w.call("GET", path, "", "")
			var m map[string]any
			if json.Unmarshal(raw, &m) == nil && ok(m) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("%s never reached the wanted state", path)
	}
	root := cfg.Panes.Roots[0]

	// Errors first: nothing exists yet.
	pin("error_no_endpoint", "GET", "/v1/nothing", "", "")
	pin("error_unknown_runtime", "GET", "/v1/runtimes/rt_golden.nobody", "", "")
	pin("error_unknown_trigger", "GET", "/v1/triggers/nope", "", "")
	pin("error_malformed_json", "POST", "/v1/triggers", "", `{"workspace":`)
	pin("error_unknown_field", "POST", "/v1/triggers", "", `{"workspace":"golden","agent":"sh","prompt":"x","bogus":1}`)
	pin("error_not_object", "POST", "/v1/runtimes", "", `[1]`)
	pin("error_oversize", "POST", "/v1/triggers", "", `{"prompt":"`+strings.Repeat("a", 2<<20)+`"}`)
	pin("error_bad_token", "GET", "/v1/runtimes", "garbage", "")
	pin("error_bad_workspace", "POST", "/v1/triggers", "", `{"workspace":"bad ws","agent":"sh","prompt":"x"}`)
	pin("error_trigger_missing_fields", "POST", "/v1/triggers", "", `{"prompt":"x"}`)
	pin("error_spawn_outside_root", "POST", "/v1/runtimes", "", `{"workspace":"golden","role":"sh","agent":"shell","dir":"/","argv":["sh"]}`)
	pin("health_empty", "GET", "/v1/health", "", "")
	pin("runtimes_empty", "GET", "/v1/runtimes", "", "")
	pin("triggers_empty", "GET", "/v1/triggers", "", "")
	pin("schedules_empty", "GET", "/v1/schedules", "", "")
	pin("tokens_empty", "GET", "/v1/tokens", "", "")

	// A runtime, and one registered beside it.
	pin("spawn", "POST", "/v1/runtimes", "", `{"workspace":"golden","role":"sh","agent":"shell","dir":"`+root+`","argv":["sh"]}`)
	waitFor("/v1/runtimes/rt_golden.sh", func(m map[string]any) bool { return m["status"] == "ready" && m["readiness"] == "READY" })
	pin("spawn_again", "POST", "/v1/runtimes", "", `{"workspace":"golden","role":"sh","agent":"shell","dir":"`+root+`","argv":["sh"]}`)
	pin("error_register_taken", "POST", "/v1/runtimes/register", "", `{"workspace":"golden","role":"watcher","agent":"shell","target":"agents_golden:sh.0","unmanaged":true}`)
	td.tmux("new-window", "-d", "-t", "agents_golden", "-n", "watch", "sh")
	pin("register", "POST", "/v1/runtimes/register", "", `{"workspace":"golden","role":"watcher","agent":"shell","target":"agents_golden:watch.0","unmanaged":true}`)
	waitFor("/v1/runtimes/rt_golden.watcher", func(m map[string]any) bool { return m["status"] == "ready" && m["readiness"] == "READY" })
	pin("runtime", "GET", "/v1/runtimes/rt_golden.sh", "", "")
	pin("runtimes", "GET", "/v1/runtimes?workspace=golden", "", "")
	pin("health", "GET", "/v1/health", "", "")
	pin("tail", "GET", "/v1/runtimes/rt_golden.sh/tail?lines=3", "", "")
	pin("error_tail_lines", "GET", "/v1/runtimes/rt_golden.sh/tail?lines=-1", "", "")
	pin("pause", "POST", "/v1/runtimes/rt_golden.sh/pause", "", "")
	pin("resume", "POST", "/v1/runtimes/rt_golden.sh/resume", "", "")
	waitFor("/v1/runtimes/rt_golden.sh", func(m map[string]any) bool { return m["status"] == "ready" })
	pin("heartbeat", "POST", "/v1/runtimes/rt_golden.sh/heartbeat", "", `{"status":"idle","cursor":"c1"}`)
	pin("error_heartbeat_status", "POST", "/v1/runtimes/rt_golden.sh/heartbeat", "", `{"status":"asleep"}`)
	pin("error_restart_unmanaged", "POST", "/v1/runtimes/rt_golden.watcher/restart", "", "")

	// A trigger and its receipt.
	pin("trigger_unknown_agent", "POST", "/v1/triggers", "", `{"trigger_id":"g0","workspace":"golden","agent":"nobody","prompt":"echo zero"}`)
	// Paused, the runtime holds the trigger: the 202 shows it queued, whatever the speed.
	w.call("POST", "/v1/runtimes/rt_golden.sh/pause", "", "")
	pin("trigger", "POST", "/v1/triggers", "", `{"trigger_id":"g1","workspace":"golden","agent":"sh","thread_id":"t1","prompt":"echo golden","reason":"golden"}`)
	w.call("POST", "/v1/runtimes/rt_golden.sh/resume", "", "")
	waitFor("/v1/triggers/g1", func(m map[string]any) bool { return m["closed"] == true })
	waitFor("/v1/runtimes/rt_golden.sh", func(m map[string]any) bool { return m["readiness"] == "READY" })
	pin("trigger_again", "POST", "/v1/triggers", "", `{"trigger_id":"g1","workspace":"golden","agent":"sh","thread_id":"t1","prompt":"echo golden","reason":"golden"}`)
	pin("receipt", "GET", "/v1/triggers/g1", "", "")
	pin("receipt_wait", "GET", "/v1/triggers/g1?wait=1s", "", "")
	pin("triggers", "GET", "/v1/triggers?workspace=golden&agent=sh", "", "")
	pin("ack", "POST", "/v1/triggers/g1/ack", "", "")
	pin("error_ack_unknown", "POST", "/v1/triggers/nope/ack", "", "")
	pin("error_force_closed", "POST", "/v1/triggers/g1/force", "", `{"reason":"r"}`)
	pin("unblock", "POST", "/v1/threads/t1/unblock", "", `{"workspace":"golden","agent":"sh","reason":"golden"}`)
	pin("error_unblock_half", "POST", "/v1/threads/t1/unblock", "", `{"workspace":"golden"}`)
	pin("audit_spawn", "GET", "/v1/audit?event=api_spawn", "", "")
	pin("audit_thread", "GET", "/v1/audit?event=thread_unblocked", "", "")
	pin("error_audit_since", "GET", "/v1/audit?since=yesterday", "", "")

	// Schedules.
	pin("schedule_add", "POST", "/v1/schedules", "", `{"workspace":"golden","agent":"sh","prompt":"tick","every":"1h"}`)
	pin("schedules", "GET", "/v1/schedules", "", "")
	pin("error_schedule_every", "POST", "/v1/schedules", "", `{"workspace":"golden","agent":"sh","prompt":"tick","every":"often"}`)
	var sch struct {
		ID string `json:"schedule_id"`
	}
	_, _, raw := w.call("GET", "/v1/schedules", "", "")
	var schs []json.RawMessage
	if json.Unmarshal(raw, &schs) != nil || len(schs) != 1 || json.Unmarshal(schs[0], &sch) != nil {
		t.Fatalf("schedules: %s", raw)
	}
	pin("schedule_remove", "DELETE", "/v1/schedules/"+sch.ID, "", "")
	pin("error_schedule_unknown", "DELETE", "/v1/schedules/sch_nope", "", "")

	// Tokens: issue, use within and beyond its scope, list, revoke, rotate.
	raw = pin("token_issue", "POST", "/v1/tokens", "", `{"subject":"orch","workspaces":["golden"],"verbs":["read","trigger"],"ttl":"1h"}`)
	var issued struct {
		Token string `json:"token"`
		ID    string `json:"jti"`
	}
	if err := json.Unmarshal(raw, &issued); err != nil || issued.Token == "" {
		t.Fatalf("token issue: %v %s", err, raw)
	}
	pin("token_runtimes", "GET", "/v1/runtimes", issued.Token, "")
	pin("error_token_spawn", "POST", "/v1/runtimes", issued.Token, `{"workspace":"golden","role":"x","agent":"shell"}`)
	pin("error_token_workspace", "POST", "/v1/triggers", issued.Token, `{"workspace":"other","agent":"sh","prompt":"x"}`)
	pin("error_token_outlives", "POST", "/v1/tokens", issued.Token, `{"subject":"sub","workspaces":["golden"],"verbs":["read"]}`)
	pin("error_token_ttl", "POST", "/v1/tokens", "", `{"subject":"orch","workspaces":["golden"],"verbs":["read"],"ttl":"forever"}`)
	pin("tokens", "GET", "/v1/tokens", "", "")
	pin("token_revoke", "DELETE", "/v1/tokens/"+issued.ID, "", "")
	pin("error_token_revoked", "GET", "/v1/runtimes", issued.Token, "")
	pin("error_token_revoke_unknown", "DELETE", "/v1/tokens/nope", "", "")
	pin("token_rotate", "POST", "/v1/tokens/rotate-key", "", "")

	// The end of a runtime.
	pin("stop", "POST", "/v1/runtimes/rt_golden.sh/stop", "", `{"reason":"golden done"}`)
	pin("deregister", "DELETE", "/v1/runtimes/rt_golden.watcher?reason=gone", "", "")
	pin("error_deregister_again", "DELETE", "/v1/runtimes/rt_golden.watcher", "", "")

	// The agent's reply on a receipt, handed in as the agent's record reader does (a shell
	// has no record); last, so that the files before keep their numbers.
	nudge.Publish(td.d.Rooms().Bus, nudge.ReplyRead{RuntimeID: "rt_golden.sh", TriggerID: "g1", Text: "golden answer", EndedAt: time.Now(), Evidence: "golden.jsonl:1"})
	pin("receipt_reply", "GET", "/v1/triggers/g1?wait=1s&for=reply", "", "")
	pin("error_receipt_for", "GET", "/v1/triggers/g1?wait=1s&for=answer", "", "")
	// A register names the pane's tmux server (tmux_socket: a user's own session).
	pin("error_register_tmux_socket", "POST", "/v1/runtimes/register", "", `{"workspace":"other","role":"ps","agent":"shell","target":"proj-ps","tmux_socket":"a/b"}`)
	td.stop()

	dir := filepath.Join("testdata", "wire")
	if *updateWire {
		os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range order {
		path := filepath.Join(dir, fmt.Sprintf("%02d_%s.txt", i, name))
		if *updateWire {
			if err := os.WriteFile(path, []byte(got[name]), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v (run go test -run TestWireGolden -update-wire once)", err)
			continue
		}
		if !bytes.Equal(want, []byte(got[name])) {
			t.Errorf("%s: the wire changed:\n--- want\n%s\n--- got\n%s", name, want, got[name])
		}
	}
}
