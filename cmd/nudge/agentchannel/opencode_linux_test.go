package agentchannel

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/panes"
)

// openCodeServer serves prompt_async on a loopback port of this process and counts what
// reaches it; it writes the runtime's channel file as a spawn does.
func openCodeServer(t *testing.T, dir, runtimeID string) (*atomic.Int32, *atomic.Value) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int32
	var body atomic.Value
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if _, pw, _ := r.BasicAuth(); pw != strings.Repeat("p", 48) || r.URL.Path != "/session/ses_abcdefgh12345678/prompt_async" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		b, _ := io.ReadAll(r.Body)
		body.Store(string(b))
		w.WriteHeader(http.StatusNoContent)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	b, _ := json.Marshal(panes.OpenCodeServer{Port: ln.Addr().(*net.TCPAddr).Port, Password: strings.Repeat("p", 48)})
	file := strings.TrimSuffix(panes.ChannelSocket(dir, runtimeID), ".sock") + ".opencode.json"
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return &hits, &body
}

// TestOpenCodeDeliverOnlyToTheRuntimesOwnListener: the prompt and the password go to the
// port only when its listener is a socket the runtime's own process (or one below it)
// holds. A listener of another process on the port the runtime was given (another agent
// of the user took it first, or the runtime's OpenCode is gone and something else
// listens there) gets nothing, not even a connection: the prompt is typed.
func TestOpenCodeDeliverOnlyToTheRuntimesOwnListener(t *testing.T) {
	dir := t.TempDir()
	c := &Channels{Profiles: map[string]panes.Profile{"opencode": {Channel: panes.ChannelOpenCode}}, Dir: dir}
	rt := nudge.Runtime{RuntimeID: "rt_ws.dev", Agent: "opencode", SessionID: "ses_abcdefgh12345678"}
	hits, body := openCodeServer(t, dir, rt.RuntimeID)

	other := exec.Command("sleep", "60") // the runtime's program, holding no listener
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	rt.PID = other.Process.Pid
	if _, err := c.Deliver(context.Background(), rt, envelope); !errors.Is(err, inject.ErrNoChannel) {
		t.Fatalf("a listener of another process: %v, want no channel", err)
	}
	if hits.Load() != 0 {
		t.Fatalf("the listener of another process got %d requests", hits.Load())
	}

	rt.PID = os.Getpid() // this process holds the listener: it is the runtime's
	backend, err := c.Deliver(context.Background(), rt, envelope)
	if err != nil || backend != BackendOpenCode || hits.Load() != 1 {
		t.Fatalf("the runtime's own listener: %q %v (%d requests)", backend, err, hits.Load())
	}
	var got struct {
		Parts []struct{ Type, Text string } `json:"parts"`
	}
	if json.Unmarshal([]byte(body.Load().(string)), &got); len(got.Parts) != 1 || got.Parts[0].Text != envelope {
		t.Fatalf("body: %s", body.Load())
	}

	// No session known yet, a session id that is no OpenCode's, a channel file others may
	// read: nothing goes.
	for name, mod := range map[string]func(*nudge.Runtime){
		"no session":   func(r *nudge.Runtime) { r.SessionID = "" },
		"a forged id":  func(r *nudge.Runtime) { r.SessionID = "ses_abc/../../x" },
		"no process":   func(r *nudge.Runtime) { r.PID = 0 },
		"another host": func(r *nudge.Runtime) { r.Host = "far" },
	} {
		r := rt
		mod(&r)
		if _, err := c.Deliver(context.Background(), r, envelope); !errors.Is(err, inject.ErrNoChannel) {
			t.Errorf("%s: %v, want no channel", name, err)
		}
	}
	file := strings.TrimSuffix(panes.ChannelSocket(dir, rt.RuntimeID), ".sock") + ".opencode.json"
	os.Chmod(file, 0o644)
	if _, err := c.Deliver(context.Background(), rt, envelope); !errors.Is(err, inject.ErrNoChannel) {
		t.Errorf("a channel file others may read: %v, want no channel", err)
	}
	if hits.Load() != 1 {
		t.Fatalf("%d requests, want 1", hits.Load())
	}
}
