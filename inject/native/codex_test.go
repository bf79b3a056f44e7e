package native

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// fakeCwd is the directory the fake's thread-1 works in; thread-other works elsewhere
// (another runtime's session of the shared app-server).
const fakeCwd = "/home/dev/proj"

// fakeCodex serves the control socket as Codex 0.169 does: initialize, then
// thread/read and thread/queue/add for the threads it knows, with a notification between.
func fakeCodex(t *testing.T, home string, got chan<- map[string]any) {
	t.Helper()
	var queue []map[string]any // the thread's queued submissions
	dir := filepath.Join(home, "app-server-control")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "app-server-control.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/rpc" {
			http.NotFound(w, r)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			var m map[string]any
			json.Unmarshal(b, &m)
			got <- m
			var out any
			switch m["method"] {
			case "initialize":
				out = map[string]any{"id": m["id"], "result": map[string]any{"userAgent": "codex-tui/0.169.0"}}
			case "thread/read":
				p := m["params"].(map[string]any)
				cwd := map[any]string{"thread-1": fakeCwd, "thread-other": "/home/dev/other-workspace"}[p["threadId"]]
				out = map[string]any{"id": m["id"], "result": map[string]any{"thread": map[string]any{"id": p["threadId"], "cwd": cwd}}}
				if cwd == "" {
					out = map[string]any{"id": m["id"], "error": map[string]any{"code": -32600, "message": "thread not found"}}
				}
			case "thread/queue/add":
				c.Write(ctx, websocket.MessageText, []byte(`{"method":"thread/status/changed","params":{}}`))
				p := m["params"].(map[string]any)
				if p["threadId"] != "thread-1" {
					out = map[string]any{"id": m["id"], "error": map[string]any{"code": -32600, "message": "thread not found"}}
				} else {
					sub := map[string]any{"id": "sub-" + string(rune('1'+len(queue))), "input": p["input"]}
					queue = append(queue, sub)
					out = map[string]any{"id": m["id"], "result": map[string]any{"queuedSubmission": sub}}
				}
			case "thread/queue/list":
				out = map[string]any{"id": m["id"], "result": map[string]any{"data": queue, "nextCursor": nil}}
			case "thread/queue/delete":
				p := m["params"].(map[string]any)
				out = map[string]any{"id": m["id"], "error": map[string]any{"code": -32600, "message": "no such submission"}}
				for i, q := range queue {
					if q["id"] == p["queuedSubmissionId"] {
						queue = append(queue[:i], queue[i+1:]...)
						out = map[string]any{"id": m["id"], "result": map[string]any{}}
						break
					}
				}
			default:
				continue
			}
			b, _ = json.Marshal(out)
			c.Write(ctx, websocket.MessageText, b)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

func TestCodexQueue(t *testing.T) {
	home := t.TempDir()
	got := make(chan map[string]any, 16)
	fakeCodex(t, home, got)
	c := Codex{Home: home, Version: "test"}
	id, err := c.Queue(context.Background(), "thread-1", fakeCwd, "line one\nline two")
	if err != nil || id != "sub-1" {
		t.Fatalf("queue: %q %v", id, err)
	}
	if m := <-got; m["method"] != "initialize" {
		t.Fatalf("first %v", m)
	}
	if m := <-got; m["method"] != "initialized" {
		t.Fatalf("second %v", m)
	}
	if m := <-got; m["method"] != "thread/read" {
		t.Fatalf("third %v", m)
	}
	m := <-got
	p := m["params"].(map[string]any)
	in := p["input"].([]any)[0].(map[string]any)
	if m["method"] != "thread/queue/add" || in["text"] != "line one\nline two" || in["type"] != "text" || len(p["clientUserMessageId"].(string)) != 36 {
		t.Fatalf("queue request %v", m)
	}
	if _, err := c.Queue(context.Background(), "thread-2", fakeCwd, "x"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "thread not found") {
		t.Fatalf("unknown thread: %v", err)
	}
	// Withdraw takes a submission still waiting in the queue out of it, once.
	if _, err := c.Queue(context.Background(), "thread-1", fakeCwd, "[BRIDGE_TRIGGER id=t2 thread=-] two"); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		<-got
	}
	if took, err := c.Withdraw(context.Background(), "thread-1", fakeCwd, "[BRIDGE_TRIGGER id=t2 "); !took || err != nil {
		t.Fatalf("withdraw: %v %v", took, err)
	}
	if took, err := c.Withdraw(context.Background(), "thread-1", fakeCwd, "[BRIDGE_TRIGGER id=t2 "); took || err != nil {
		t.Fatalf("withdraw again: %v %v", took, err)
	}
}

// TestCodexOtherThreadRefused: the app-server is shared by every Codex of its home; a
// session id that names another runtime's thread (working in another directory: an
// agent made nudge read another workspace's session id) gets nothing queued into it, and
// nothing withdrawn from it.
func TestCodexOtherThreadRefused(t *testing.T) {
	home := t.TempDir()
	got := make(chan map[string]any, 64)
	fakeCodex(t, home, got)
	c := Codex{Home: home, Version: "test"}
	if _, err := c.Queue(context.Background(), "thread-other", fakeCwd, "[BRIDGE_TRIGGER id=t1 thread=-] x"); !errors.Is(err, ErrNotThisThread) || !errors.Is(err, ErrRefused) {
		t.Fatalf("queue into another runtime's thread: %v, want ErrNotThisThread", err)
	}
	if took, err := c.Withdraw(context.Background(), "thread-other", fakeCwd, "[BRIDGE_TRIGGER id=t1 "); took || !errors.Is(err, ErrNotThisThread) {
		t.Fatalf("withdraw from another runtime's thread: %v %v", took, err)
	}
	for {
		select {
		case m := <-got:
			if m["method"] == "thread/queue/add" || m["method"] == "thread/queue/list" || m["method"] == "thread/queue/delete" {
				t.Fatalf("asked the other thread's queue: %v", m)
			}
		default:
			return
		}
	}
}

func TestCodexUnavailable(t *testing.T) {
	home := t.TempDir()
	if _, err := (Codex{Home: home}).Queue(context.Background(), "t", fakeCwd, "x"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("no socket: %v", err)
	}
	dir := filepath.Join(home, "app-server-control")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "app-server-control.sock"), nil, 0o600)
	if _, err := (Codex{Home: home}).Queue(context.Background(), "t", fakeCwd, "x"); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("a file: %v", err)
	}
}

func TestUUID7(t *testing.T) {
	u := uuid7()
	if len(u) != 36 || u[14] != '7' || !strings.ContainsRune("89ab", rune(u[19])) {
		t.Fatal(u)
	}
}
