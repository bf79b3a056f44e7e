package controlmode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Helpers for tests against a real tmux on a private socket.

var serverSeq atomic.Int64

// tmuxServer is a private tmux server (tmux -L nudge-t-…) killed at cleanup.
type tmuxServer struct {
	t       *testing.T
	name    string
	sockDir string // where tmux puts its sockets
}

// removeSocket removes the socket file of server name at cleanup: tmux leaves it behind.
func (s *tmuxServer) removeSocket(name string) {
	s.t.Cleanup(func() { os.Remove(filepath.Join(s.sockDir, name)) })
}

// newServer starts a private server with session s (80x24) running argv (or a shell).
func newServer(t *testing.T, argv ...string) *tmuxServer {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	s := &tmuxServer{t: t, name: fmt.Sprintf("nudge-t-%d-%d", os.Getpid(), serverSeq.Add(1))}
	// One cleanup, in this order: kill the server while its socket still exists, then
	// remove the socket file tmux leaves behind (the other way round leaks the server).
	t.Cleanup(func() {
		exec.Command("tmux", "-L", s.name, "kill-server").Run()
		if s.sockDir != "" {
			os.Remove(filepath.Join(s.sockDir, s.name))
		}
	})
	s.run(append([]string{"new-session", "-d", "-s", "s", "-x", "80", "-y", "24"}, argv...)...)
	s.sockDir = filepath.Dir(s.run("display-message", "-p", "#{socket_path}"))
	return s
}

// run runs one tmux command against the server and returns its trimmed output.
func (s *tmuxServer) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", s.name, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %q: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (s *tmuxServer) config() Config {
	return Config{SocketName: s.name, ConfigFile: "/dev/null", Session: "s"}
}

// collector gathers a Conn's events and output for tests.
type collector struct {
	mu     sync.Mutex
	events []Event
	output map[int][]byte
}

func (col *collector) attach(cfg Config) Config {
	col.output = map[int][]byte{}
	cfg.OnEvent = func(ev Event) {
		col.mu.Lock()
		col.events = append(col.events, ev)
		col.mu.Unlock()
	}
	cfg.OnOutput = func(pane int, data []byte, _ time.Duration) {
		col.mu.Lock()
		col.output[pane] = append(col.output[pane], data...)
		col.mu.Unlock()
	}
	return cfg
}

func (col *collector) paneOutput(pane int) string {
	col.mu.Lock()
	defer col.mu.Unlock()
	return string(col.output[pane])
}

func (col *collector) find(match func(Event) bool) bool {
	col.mu.Lock()
	defer col.mu.Unlock()
	for _, ev := range col.events {
		if match(ev) {
			return true
		}
	}
	return false
}

func dial(t *testing.T, cfg Config) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func do(t *testing.T, c *Conn, cmd string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.Do(ctx, cmd)
	if err != nil {
		t.Fatalf("Do(%q): %v", cmd, err)
	}
	return r.Lines
}

// checkGoroutines fails the test if goroutines started during it are still running
// at cleanup (after a generous grace period).
func checkGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("goroutines: %d before, %d after\n%s", before, runtime.NumGoroutine(),
					buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}
