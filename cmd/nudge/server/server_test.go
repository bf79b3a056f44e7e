package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/panes"
	"github.com/nudgehq/nudge/store"
)

// testServer is a Server on fakes, its handler called in-process.
type testServer struct {
	t    *testing.T
	s    *Server
	deps Deps
	rts  *fakeRuntimes
	trig *fakeTriggers
	db   *fakeStore
	log  *bytes.Buffer
}

// scoped is the caller the fake authenticator returns for "Bearer scoped": read and
// trigger on workspace a only.
var scoped = auth.Caller{Subject: "orch#12345678", UID: 1000, Workspaces: []string{"a"}, Verbs: []string{auth.VerbRead, auth.VerbTrigger}}

func newTestServer(t *testing.T) *testServer {
	ts := &testServer{t: t, log: &bytes.Buffer{}, db: &fakeStore{}}
	ts.rts = &fakeRuntimes{list: func() []nudge.Runtime {
		return []nudge.Runtime{{RuntimeID: "rt_a.x", WorkspaceID: "a", Role: "x", Status: nudge.StatusReady},
			{RuntimeID: "rt_b.y", WorkspaceID: "b", Role: "y", Status: nudge.StatusReady}}
	}}
	ts.trig = &fakeTriggers{}
	ts.deps = Deps{
		Auth: &fakeAuth{authenticate: func(p auth.Peer, h string) (auth.Caller, error) {
			switch h {
			case "":
				return auth.Caller{Subject: "uid:1000", UID: p.UID}, nil
			case "Bearer scoped":
				return scoped, nil
			case "Bearer scopedadmin":
				return auth.Caller{Subject: "ops#1", UID: 1000, Workspaces: []string{"a"}}, nil // every verb, workspace a
			}
			return auth.Caller{UID: p.UID, Subject: "uid:1000"}, nudge.NewError(nudge.Unauthorized, "token refused: malformed token")
		}},
		Tokens: &fakeTokens{}, Policy: (*auth.Policy)(nil), Runtimes: ts.rts, Panes: &fakePanes{},
		Triggers: ts.trig, Acks: &fakeAcks{}, Store: ts.db, Schedules: &fakeSchedules{},
		Metrics: fakeMetrics{"up 1\n"},
	}
	return ts
}

func (ts *testServer) server() *Server {
	if ts.s == nil {
		cfg := DefaultConfig()
		cfg.Version = "test"
		cfg.Paths = api.Paths{StateDir: "/srv/nudge", Socket: "/run/nudge.sock", Store: "/srv/nudge/nudge.db"}
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: ts.log, Level: hclog.Debug})
		ts.s = New(cfg, ts.deps)
	}
	return ts.s
}

// do sends a request through the handler as peer uid 1000 and returns the status and body.
func (ts *testServer) do(method, path, token, body string) (int, string) {
	ts.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, "http://nudge"+path, rd)
	req = req.WithContext(WithPeer(req.Context(), auth.Peer{UID: 1000, PID: 1, Known: true}))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("X-Request-Id", "req_test")
	w := httptest.NewRecorder()
	ts.server().Handler().ServeHTTP(w, req)
	return w.Code, w.Body.String()
}

func wantBody(t *testing.T, name string, status int, body string, wantStatus int, wantParts ...string) {
	t.Helper()
	if status != wantStatus {
		t.Errorf("%s: status %d, want %d: %s", name, status, wantStatus, body)
	}
	for _, p := range wantParts {
		if !strings.Contains(body, p) {
			t.Errorf("%s: body lacks %q: %s", name, p, body)
		}
	}
}

func TestHealthAndNoEndpoint(t *testing.T) {
	ts := newTestServer(t)
	st, body := ts.do("GET", "/v1/health", "", "")
	wantBody(t, "health", st, body, 200, `"ok": true`, `"runtimes": 2`, `"version": "test"`)
	if i, j := strings.Index(body, `"ok"`), strings.Index(body, `"version"`); i > j {
		t.Errorf("health's fields are not in the wire order: %s", body)
	}
	st, body = ts.do("GET", "/v1/nothing", "", "")
	wantBody(t, "no endpoint", st, body, 404, `"error_code": "NOT_FOUND"`, `"message": "no such endpoint: GET /v1/nothing"`)
	st, body = ts.do("GET", "/metrics", "", "")
	wantBody(t, "metrics", st, body, 200, "up 1")
}

// An error without one of nudge's codes is answered "internal error" with the request
// id; its text (which may hold paths or secrets) is only logged.
func TestInternalErrorHidden(t *testing.T) {
	ts := newTestServer(t)
	ts.rts.spawn = func(context.Context, panes.SpawnRequest) (nudge.Runtime, error) {
		return nudge.Runtime{}, errors.New("open /secret/state/nudge.db: input/output error")
	}
	st, body := ts.do("POST", "/v1/runtimes", "", `{"workspace":"a","role":"x","agent":"shell"}`)
	wantBody(t, "spawn", st, body, 500, `"error_code": "INTERNAL"`, `"message": "internal error (request req_test)"`)
	if strings.Contains(body, "/secret") {
		t.Errorf("the answer leaks the internal error: %s", body)
	}
	if !strings.Contains(ts.log.String(), "/secret/state") || !strings.Contains(ts.log.String(), "req_test") {
		t.Errorf("the log lacks the detail or the request id:\n%s", ts.log)
	}
}

// A panicking handler answers 500 and the server keeps serving.
func TestPanicIsInternalError(t *testing.T) {
	ts := newTestServer(t)
	ts.trig.get = func(string) (nudge.Trigger, error) { panic("boom") }
	st, body := ts.do("GET", "/v1/triggers/t1", "", "")
	wantBody(t, "panic", st, body, 500, `"message": "internal error (request req_test)"`)
	st, _ = ts.do("GET", "/v1/health", "", "")
	if st != 200 {
		t.Fatalf("after a panic: %d", st)
	}
}

// A refused mutating call is audited; a refused read is not.
func TestRefusalAudited(t *testing.T) {
	ts := newTestServer(t)
	st, body := ts.do("GET", "/v1/runtimes", "garbage", "")
	wantBody(t, "bad token read", st, body, 401, `"error_code": "UNAUTHORIZED"`)
	if len(ts.db.audit) != 0 {
		t.Fatalf("a refused read was audited: %+v", ts.db.audit)
	}
	st, body = ts.do("POST", "/v1/runtimes", "scoped", `{"workspace":"a","role":"x"}`)
	wantBody(t, "scoped spawn", st, body, 403, `"error_code": "FORBIDDEN"`, "may not spawn")
	if len(ts.db.audit) != 1 || ts.db.audit[0].Event != "api_refused" || ts.db.audit[0].Code != nudge.Forbidden ||
		ts.db.audit[0].Subject != scoped.Subject || *ts.db.audit[0].PeerUID != 1000 {
		t.Fatalf("audit: %+v", ts.db.audit)
	}
}

// Health names the daemon's paths (doctor checks them) to an unrestricted caller only.
func TestHealthPaths(t *testing.T) {
	ts := newTestServer(t)
	st, body := ts.do("GET", "/v1/health", "", "")
	wantBody(t, "health", st, body, 200, `"paths": {`, `"state_dir": "/srv/nudge"`, `"socket": "/run/nudge.sock"`,
		`"store": "/srv/nudge/nudge.db"`, `"profile_dir": ""`, `"pack_dir": ""`)
	st, body = ts.do("GET", "/v1/health", "scoped", "")
	wantBody(t, "scoped health", st, body, 200, `"ok": true`)
	if strings.Contains(body, "paths") || strings.Contains(body, "/srv/nudge") {
		t.Errorf("a scoped caller is told the daemon's paths: %s", body)
	}
}

// A scoped caller sees only its workspaces; another workspace's runtime is answered
// exactly as one that does not exist.
func TestScopedRuntimes(t *testing.T) {
	ts := newTestServer(t)
	st, body := ts.do("GET", "/v1/runtimes", "scoped", "")
	wantBody(t, "list", st, body, 200, "rt_a.x")
	if strings.Contains(body, "rt_b.y") {
		t.Errorf("a scoped caller sees another workspace: %s", body)
	}
	_, other := ts.do("GET", "/v1/runtimes/rt_b.y", "scoped", "")
	_, none := ts.do("GET", "/v1/runtimes/rt_b.nobody", "scoped", "")
	if strings.ReplaceAll(other, "rt_b.y", "ID") != strings.ReplaceAll(none, "rt_b.nobody", "ID") {
		t.Errorf("another workspace's runtime is told apart from a missing one:\n%s\n%s", other, none)
	}
}

func TestTriggerAnswers(t *testing.T) {
	ts := newTestServer(t)
	var got inject.Request
	res := inject.Submitted{Trigger: nudge.Trigger{TriggerID: "t1", WorkspaceID: "a", State: nudge.StateQueued}, Created: true}
	ts.trig.submit = func(_ context.Context, req inject.Request) (inject.Submitted, error) { got = req; return res, nil }
	st, body := ts.do("POST", "/v1/triggers", "scoped", `{"trigger_id":"t1","workspace":"a","agent":"x","prompt":"hi","override_intent":"human_override"}`)
	wantBody(t, "created", st, body, 202, `"trigger_id": "t1"`)
	if got.Caller != scoped.Subject || got.CallerUID != 1000 || got.Prompt != "hi" || got.OverrideIntent != "human_override" || got.Received.IsZero() {
		t.Errorf("the pipeline got %+v", got)
	}
	res.Created = false
	st, body = ts.do("POST", "/v1/triggers", "", `{"trigger_id":"t1","workspace":"a","agent":"x","prompt":"hi"}`)
	wantBody(t, "repeated", st, body, 200, `"result": "already_active"`)
	res.Trigger.WorkspaceID = "b" // the id is taken in a workspace the caller cannot see
	st, body = ts.do("POST", "/v1/triggers", "scoped", `{"trigger_id":"t1","workspace":"a","agent":"x","prompt":"hi"}`)
	wantBody(t, "another workspace's id", st, body, 409, `"message": "trigger_id t1 is already used"`)
	st, body = ts.do("POST", "/v1/triggers", "", `{"prompt":"`+strings.Repeat("a", 2<<20)+`"}`)
	wantBody(t, "oversize", st, body, 400, `"error_code": "PAYLOAD_REJECTED"`)
	st, body = ts.do("POST", "/v1/triggers", "", `{"prompt":"x","bogus":1}`)
	wantBody(t, "unknown field", st, body, 400, `unknown field \"bogus\"`)
}

// The ack handler checks the caller's scope, acks through the pipeline and audits.
func TestAck(t *testing.T) {
	ts := newTestServer(t)
	tr := nudge.Trigger{TriggerID: "t1", WorkspaceID: "a", RuntimeID: "rt_a.x", State: nudge.StateSubmitted}
	ts.trig.get = func(id string) (nudge.Trigger, error) {
		if id != "t1" {
			return nudge.Trigger{}, fmt.Errorf("get trigger %s: %w", id, store.ErrNotFound)
		}
		return tr, nil
	}
	ts.trig.ack = func(context.Context, string) (nudge.Trigger, error) {
		tr.State = nudge.StateAcked
		return tr, nil
	}
	st, body := ts.do("POST", "/v1/triggers/t1/ack", "", "")
	wantBody(t, "ack", st, body, 200, `"state": "acked"`)
	if n := len(ts.db.audit); n != 1 || ts.db.audit[0].Event != "api_ack" {
		t.Errorf("audit: %+v", ts.db.audit)
	}
	st, body = ts.do("POST", "/v1/triggers/nope/ack", "", "")
	wantBody(t, "unknown", st, body, 404, `"message": "get trigger nope: not found"`)
}

// The event stream shows a caller the events of its workspaces only, and its error (a
// bad since) is the JSON error body.
func TestEventsScoped(t *testing.T) {
	ts := newTestServer(t)
	ts.deps.Events = &fakeEvents{serve: func(w http.ResponseWriter, r *http.Request, show func(events.Event) bool) error {
		if r.URL.Query().Get("since") == "x" {
			return nudge.NewError(nudge.BadRequest, "since: want a sequence number")
		}
		for _, ws := range []string{"a", "b", ""} {
			if show(events.Event{Workspace: ws}) {
				fmt.Fprintf(w, "[%s]", ws)
			}
		}
		return nil
	}}
	if st, body := ts.do("GET", "/v1/events", "scoped", ""); st != 200 || body != "[a]" {
		t.Errorf("scoped: %d %q", st, body)
	}
	if st, body := ts.do("GET", "/v1/events", "", ""); st != 200 || body != "[a][b][]" {
		t.Errorf("unrestricted: %d %q", st, body)
	}
	st, body := ts.do("GET", "/v1/events?since=x", "", "")
	wantBody(t, "bad since", st, body, 400, `"error_code": "BAD_REQUEST"`)
}

// Open serves on the socket (0600) and on the metrics address; Close drains, joins both
// serving goroutines, removes the socket, and is idempotent.
func TestOpenClose(t *testing.T) {
	ts := newTestServer(t)
	dir, err := os.MkdirTemp("", "srv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := DefaultConfig()
	cfg.Socket = filepath.Join(dir, "api.sock")
	cfg.MetricsAddr = "127.0.0.1:0"
	own := os.Geteuid()
	ts.deps.Auth = &fakeAuth{authenticate: func(p auth.Peer, _ string) (auth.Caller, error) {
		if !p.Known || p.UID != own {
			return auth.Caller{}, nudge.NewError(nudge.Forbidden, "peer")
		}
		return auth.Caller{Subject: "uid"}, nil
	}}
	s, err := Open(cfg, ts.deps)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(cfg.Socket); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v %v", fi, err)
	}
	if _, err := Listen(cfg.Socket); err == nil || !strings.Contains(err.Error(), "another daemon") {
		t.Fatalf("a second listener on a live socket: %v", err)
	}
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", cfg.Socket)
	}}}
	resp, err := c.Get("http://nudge/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		OK bool `json:"ok"`
	}
	json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if resp.StatusCode != 200 || !h.OK {
		t.Fatalf("health over the socket (peer credentials): %d %+v", resp.StatusCode, h)
	}
	c.CloseIdleConnections()
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A joined goroutine may still be on its way out after wg.Done: give it a moment.
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(st, "(*Server).serve") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a serving goroutine outlived Close:\n%s", st)
		}
	}
	if _, err := os.Lstat(cfg.Socket); !os.IsNotExist(err) {
		t.Fatalf("the socket is left behind: %v", err)
	}
	select {
	case err := <-s.Err():
		t.Fatalf("a listener failed: %v", err)
	default:
	}
}

// The tail's line count is checked and capped before the pane is read.
func TestTailLines(t *testing.T) {
	ts := newTestServer(t)
	var asked int
	ts.deps.Panes = &fakePanes{tail: func(_ context.Context, rt nudge.Runtime, n int) ([]string, error) {
		asked = n
		return []string{"$ echo hi", "hi"}, nil
	}}
	st, body := ts.do("GET", "/v1/runtimes/rt_a.x/tail?lines=99999", "", "")
	wantBody(t, "capped", st, body, 200, `"runtime_id": "rt_a.x"`, `"hi"`)
	if asked != maxTailLines {
		t.Errorf("asked the pane for %d lines, want the cap %d", asked, maxTailLines)
	}
	st, body = ts.do("GET", "/v1/runtimes/rt_a.x/tail?lines=-1", "", "")
	wantBody(t, "negative", st, body, 400, `"message": "lines: want a positive number"`)
	st, body = ts.do("GET", "/v1/runtimes/rt_b.y/tail", "scoped", "")
	wantBody(t, "another workspace", st, body, 404, `"message": "no runtime rt_b.y"`)
}

// Bad bodies on every endpoint that reads one: a 400 with the error body, never a 500,
// and the dependencies behind are never called (their fakes would panic).
func TestBadBodies(t *testing.T) {
	ts := newTestServer(t)
	ts.trig.get = func(id string) (nudge.Trigger, error) {
		return nudge.Trigger{TriggerID: id, WorkspaceID: "a"}, nil
	}
	paths := []string{"/v1/runtimes", "/v1/runtimes/register", "/v1/runtimes/rt_a.x/stop", "/v1/runtimes/rt_a.x/restart",
		"/v1/runtimes/rt_a.x/heartbeat", "/v1/triggers", "/v1/triggers/t1/force", "/v1/threads/t1/unblock",
		"/v1/schedules", "/v1/tokens"}
	bodies := map[string]string{
		"truncated": `{"workspace":`, "array": `[1]`, "null": `null`, "unknown field": `{"bogus":1}`,
		"trailing": `{} {}`, "twice": `{"reason":"a","reason":"b"}`, "oversize": `{"reason":"` + strings.Repeat("a", 2<<20) + `"}`,
	}
	for _, path := range paths {
		for name, body := range bodies {
			st, got := ts.do("POST", path, "", body)
			if st != 400 || !strings.Contains(got, `"error_code": "BAD_REQUEST"`) && !strings.Contains(got, `"error_code": "PAYLOAD_REJECTED"`) {
				t.Errorf("%s, %s: %d %s", path, name, st, got)
			}
		}
	}
}

// The optional reason of pause and resume (`nudge pause ID --reason ...`) reaches the
// registry's transition and the audit record; it was dropped before.
func TestPauseReasonRecorded(t *testing.T) {
	ts := newTestServer(t)
	var got string
	ts.rts.setPaused = func(id string, paused bool, reason string) (nudge.Runtime, error) {
		got = reason
		return nudge.Runtime{RuntimeID: id, WorkspaceID: "a", Role: "x", Status: nudge.StatusReady, Paused: paused}, nil
	}
	st, body := ts.do("POST", "/v1/runtimes/rt_a.x/pause", "", `{"reason":"deploy window"}`)
	wantBody(t, "pause", st, body, 200, `"paused": true`)
	if got != "triggers_paused by uid:1000: deploy window" {
		t.Errorf("the registry got reason %q", got)
	}
	if n := len(ts.db.audit); n != 1 || ts.db.audit[0].Event != "triggers_paused" || ts.db.audit[0].Reason != "deploy window" {
		t.Fatalf("audit: %+v", ts.db.audit)
	}
	st, body = ts.do("POST", "/v1/runtimes/rt_a.x/resume", "", "")
	wantBody(t, "resume without a body", st, body, 200, `"paused": false`)
	if got != "triggers_resumed by uid:1000" || ts.db.audit[len(ts.db.audit)-1].Reason != "" {
		t.Errorf("resume: reason %q, audit %+v", got, ts.db.audit)
	}
}

// TestAnotherWorkspaceUnknown: a caller scoped to workspace a learns nothing of b's by
// asking for it by id (force a trigger, remove a schedule: b's answers as unknown does),
// and /metrics, whose series name every workspace's runtimes, is refused it.
func TestAnotherWorkspaceUnknown(t *testing.T) {
	ts := newTestServer(t)
	ts.trig.get = func(id string) (nudge.Trigger, error) {
		if id == "tb" {
			return nudge.Trigger{TriggerID: "tb", WorkspaceID: "b", State: nudge.StateDeferred}, nil
		}
		return nudge.Trigger{}, fmt.Errorf("get trigger %s: %w", id, store.ErrNotFound)
	}
	_, other := ts.do("POST", "/v1/triggers/tb/force", "scopedadmin", `{"reason":"x"}`)
	_, none := ts.do("POST", "/v1/triggers/tz/force", "scopedadmin", `{"reason":"x"}`)
	if strings.ReplaceAll(other, "tb", "ID") != strings.ReplaceAll(none, "tz", "ID") || strings.Contains(other, `"b"`) {
		t.Errorf("force tells another workspace's trigger apart:\n%s\n%s", other, none)
	}
	ts.db.schedules = []nudge.Schedule{{ScheduleID: "sch_b1", WorkspaceID: "b"}}
	ts.deps.Schedules.(*fakeSchedules).remove = func(string) error { t.Error("another workspace's schedule removed"); return nil }
	st, other := ts.do("DELETE", "/v1/schedules/sch_b1", "scoped", "")
	_, none = ts.do("DELETE", "/v1/schedules/sch_zz", "scoped", "")
	if st != 404 || strings.ReplaceAll(other, "sch_b1", "ID") != strings.ReplaceAll(none, "sch_zz", "ID") {
		t.Errorf("a schedule of another workspace: %d\n%s\n%s", st, other, none)
	}
	st, body := ts.do("GET", "/metrics", "scoped", "")
	wantBody(t, "metrics, scoped", st, body, 403, "FORBIDDEN", "every workspace")
	if strings.Contains(body, "up 1") {
		t.Errorf("a scoped caller read the metrics: %s", body)
	}
	st, body = ts.do("GET", "/metrics", "", "")
	wantBody(t, "metrics, unrestricted", st, body, 200, "up 1")
}

// TestTriggerListLimitOfOneWorkspace: a caller of one workspace asking for the newest N
// gets its own N, not the newest N of all workspaces cut to its own afterwards (a short
// page that also told how busy the others are).
func TestTriggerListLimitOfOneWorkspace(t *testing.T) {
	ts := newTestServer(t)
	var got store.TriggerFilter
	ts.db.listTriggers = func(f store.TriggerFilter) ([]nudge.Trigger, error) {
		got = f
		return []nudge.Trigger{{TriggerID: "ta", WorkspaceID: "a"}}, nil
	}
	ts.trig.get = func(id string) (nudge.Trigger, error) { return nudge.Trigger{TriggerID: id, WorkspaceID: "a"}, nil }
	st, body := ts.do("GET", "/v1/triggers?newest=1&limit=5", "scoped", "")
	wantBody(t, "list", st, body, 200, `"ta"`)
	if got.Workspace != "a" || got.Limit != 5 {
		t.Errorf("the store was asked %+v, want workspace a, limit 5", got)
	}
	ts.do("GET", "/v1/triggers?limit=5", "", "")
	if got.Workspace != "" {
		t.Errorf("an unrestricted caller's list was held to %q", got.Workspace)
	}
}

// fakePerms answers every permission request with allow, and counts them.
type fakePerms struct{ asked []string }

func (f *fakePerms) Ask(_ context.Context, rt nudge.Runtime, req api.PermissionRequest) (api.PermissionDecision, error) {
	f.asked = append(f.asked, rt.RuntimeID+" "+req.Command)
	return api.PermissionDecision{Behavior: "allow"}, nil
}

// TestPermissionOnlyFromTheRuntimesOwnToken: a permission request (Claude Code's hook,
// through `nudge hook claude-permission`) is the agent's word about itself: only its own
// runtime token posts one. Another runtime's token (of its workspace or another), a
// workspace token with every verb, an unrestricted caller: refused, and nothing is held.
func TestPermissionOnlyFromTheRuntimesOwnToken(t *testing.T) {
	ts := newTestServer(t)
	perms := &fakePerms{}
	ts.deps.Perms = perms
	base := ts.deps.Auth
	runtimeToken := func(id, ws string) auth.Caller {
		return auth.Caller{Subject: "runtime:" + id, UID: 1000, RuntimeID: id, Workspaces: []string{ws},
			Verbs: []string{auth.VerbAck, auth.VerbHeartbeat, auth.VerbRead}}
	}
	ts.deps.Auth = &fakeAuth{authenticate: func(p auth.Peer, h string) (auth.Caller, error) {
		switch h {
		case "Bearer rt-ax":
			return runtimeToken("rt_a.x", "a"), nil
		case "Bearer rt-az":
			return runtimeToken("rt_a.z", "a"), nil
		case "Bearer rt-by":
			return runtimeToken("rt_b.y", "b"), nil
		}
		return base.Authenticate(p, h)
	}}
	body := `{"tool_name":"Bash","command":"touch x","session_id":"s"}`
	for _, c := range []struct{ name, token string }{
		{"another runtime of the workspace", "rt-az"},
		{"a runtime of another workspace", "rt-by"},
		{"a workspace token with every verb", "scopedadmin"},
		{"the daemon's own uid, no token", ""},
	} {
		st, got := ts.do("POST", "/v1/runtimes/rt_a.x/permission", c.token, body)
		if st/100 == 2 {
			t.Errorf("%s posted a permission request for rt_a.x: %d %s", c.name, st, got)
		}
	}
	if len(perms.asked) != 0 {
		t.Fatalf("requests held for other callers: %v", perms.asked)
	}
	st, got := ts.do("POST", "/v1/runtimes/rt_a.x/permission", "rt-ax", body)
	wantBody(t, "the runtime's own token", st, got, 200, `"behavior": "allow"`)
	st, got = ts.do("POST", "/v1/runtimes/rt_a.x/permission", "rt-ax", `{"tool_name":"Bash","command":"`+strings.Repeat("a", maxPermissionField+1)+`"}`)
	wantBody(t, "a command too long", st, got, 400, "command over")
	if len(perms.asked) != 1 || perms.asked[0] != "rt_a.x touch x" {
		t.Fatalf("held: %v", perms.asked)
	}
}
