package mcp

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// fakeDaemon answers the trigger endpoints on a unix socket: a trigger moves one state
// further at each read (queued, injected, submitted) and then stays submitted, as a
// receipt does while an agent works without acking.
type fakeDaemon struct {
	mu    sync.Mutex
	reads int
	auth  []string
}

func (f *fakeDaemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == "POST" && r.URL.Path == "/v1/triggers":
		var req api.TriggerRequest
		json.NewDecoder(r.Body).Decode(&req)
		if req.Agent == "busy" {
			w.WriteHeader(http.StatusConflict)
			json.NewEncoder(w).Encode(api.Error{ErrorCode: nudge.Conflict, Message: "trigger_id t1 is already used"})
			return
		}
		w.WriteHeader(http.StatusAccepted)
		json.NewEncoder(w).Encode(api.Trigger{TriggerID: "t1", WorkspaceID: req.Workspace, Agent: req.Agent, State: nudge.StateQueued, Result: nudge.ResultPending})
	case r.Method == "GET" && r.URL.Path == "/v1/triggers/t1":
		f.reads++
		t := api.Trigger{TriggerID: "t1", State: nudge.StateInjected, Result: nudge.ResultPending}
		if f.reads > 1 {
			now := time.Now()
			t.State, t.SubmittedAt = nudge.StateSubmitted, &now
		}
		json.NewEncoder(w).Encode(t)
	default:
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(api.Error{ErrorCode: nudge.NotFound, Message: "no such endpoint"})
	}
}

// session serves the MCP tools as a client of socket and connects the SDK's client.
func session(t *testing.T, socket, token string) *sdk.ClientSession {
	t.Helper()
	return sessionWith(t, socket, token, nil)
}

func sessionWith(t *testing.T, socket, token string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ac := api.NewClient(socket, token)
	st, ct := sdk.NewInMemoryTransports()
	ss, err := NewServer(ac, "test").Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
		cancel()
		ac.Close()
	})
	return cs
}

func startFake(t *testing.T) (*fakeDaemon, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "n.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeDaemon{}
	srv := &http.Server{Handler: f}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return f, sock
}

func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (*sdk.CallToolResult, TriggerResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var tr TriggerResult
	if !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &tr)
	}
	return res, tr
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestTriggerWaits: wait_for submitted answers once the receipt is submitted, though it
// is not closed; wait_for acked on a receipt that stays submitted answers when wait is
// up, with reached false. Every call carries the caller's token.
func TestTriggerWaits(t *testing.T) {
	f, sock := startFake(t)
	cs := session(t, sock, "tok-1")

	res, tr := call(t, cs, "trigger", map[string]any{"workspace": "ws", "agent": "coder", "prompt": "p", "wait_for": "submitted", "wait": "30s"})
	if res.IsError || tr.State != nudge.StateSubmitted || tr.Reached == nil || !*tr.Reached {
		t.Fatalf("wait_for submitted: %s", text(res))
	}
	res, tr = call(t, cs, "get_trigger", map[string]any{"trigger_id": "t1", "wait_for": "acked", "wait": "300ms"})
	if res.IsError || tr.State != nudge.StateSubmitted || tr.Reached == nil || *tr.Reached {
		t.Fatalf("wait_for acked, never acked: %s", text(res))
	}
	res, tr = call(t, cs, "trigger", map[string]any{"workspace": "ws", "agent": "coder", "prompt": "p"})
	if res.IsError || tr.State != nudge.StateQueued || tr.Reached != nil {
		t.Fatalf("no wait: %s", text(res))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.auth {
		if a != "Bearer tok-1" {
			t.Fatalf("a call went with Authorization %q", a)
		}
	}
}

// TestToolErrorsCarryTheAPIBody: a refusal, a bad argument and an absent daemon come back
// as tool errors whose text is {error_code, message}.
func TestToolErrorsCarryTheAPIBody(t *testing.T) {
	_, sock := startFake(t)
	cs := session(t, sock, "")
	for _, tc := range []struct {
		cs   *sdk.ClientSession
		tool string
		args map[string]any
		code nudge.Code
	}{
		{cs, "trigger", map[string]any{"workspace": "ws", "agent": "busy", "prompt": "p"}, nudge.Conflict},
		{cs, "get_trigger", map[string]any{"trigger_id": "t1", "wait": "soon"}, nudge.BadRequest},
		{cs, "tail", map[string]any{"runtime_id": "rt_ws.a", "lines": -1}, nudge.BadRequest},
		{cs, "get_runtime", map[string]any{"runtime_id": "rt_ws.a"}, nudge.NotFound},
		{session(t, sock+".absent", ""), "list_runtimes", nil, nudge.Unavailable},
	} {
		res, _ := call(t, tc.cs, tc.tool, tc.args)
		var body api.Error
		if !res.IsError || json.Unmarshal([]byte(text(res)), &body) != nil || body.ErrorCode != tc.code || body.Message == "" {
			t.Errorf("%s %v: error %v %q, want %s", tc.tool, tc.args, res.IsError, text(res), tc.code)
		}
	}
}

// TestToolSchemas: every tool has input and output schemas, arguments in the API's
// snake_case names, and trigger's wait_for is an enum.
func TestToolSchemas(t *testing.T) {
	_, sock := startFake(t)
	cs := session(t, sock, "")
	tl, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Tools) == 0 || len(tl.Tools) > 12 { // a few, not one per endpoint
		t.Fatalf("%d tools", len(tl.Tools))
	}
	for _, tool := range tl.Tools {
		if tool.OutputSchema == nil || tool.Description == "" {
			t.Errorf("%s: no output schema or description", tool.Name)
		}
		b, _ := json.Marshal(tool.InputSchema)
		var in struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(b, &in); err != nil {
			t.Fatal(err)
		}
		for name := range in.Properties {
			if strings.ToLower(name) != name || strings.Contains(name, "-") {
				t.Errorf("%s: argument %q is not an API JSON name", tool.Name, name)
			}
		}
		if tool.Name == "trigger" && strings.Join(in.Properties["wait_for"].Enum, ",") != "submitted,acked,closed,reply" {
			t.Errorf("trigger: wait_for enum %v", in.Properties["wait_for"].Enum)
		}
	}
}

// TestTriggerWaitReportsProgress: a host that sends a progressToken hears each state the
// receipt passes through while it waits.
func TestTriggerWaitReportsProgress(t *testing.T) {
	_, sock := startFake(t)
	msgs := make(chan string, 10)
	cs := sessionWith(t, sock, "", &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		if r.Params.ProgressToken == "p-1" {
			msgs <- r.Params.Message
		}
	}})
	params := &sdk.CallToolParams{Name: "trigger", Arguments: map[string]any{"workspace": "ws", "agent": "coder", "prompt": "p", "wait_for": "submitted"}}
	params.SetProgressToken("p-1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("trigger: %v %s", err, text(res))
	}
	var got []string
	for len(got) < 2 {
		select {
		case m := <-msgs:
			got = append(got, m)
		case <-ctx.Done():
			t.Fatalf("progress: %q", got)
		}
	}
	if got[0] != "trigger t1 is injected" || got[1] != "trigger t1 is submitted" {
		t.Fatalf("progress: %q", got)
	}
}
