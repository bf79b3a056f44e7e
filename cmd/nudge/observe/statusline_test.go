package observe

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nudgehq/nudge/controlmode"
)

func TestTmuxLiteral(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"[a: READY]", "[a: READY]"},
		{"#{pane_id} #(rm -rf /) ##", "##{pane_id} ##(rm -rf /) ####"},
		{"a\nb\rc\x00", "a b c "},
	} {
		if got := tmuxLiteral(tt.in); got != tt.want {
			t.Errorf("tmuxLiteral(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// fakeConn records the commands a StatusLine sends.
type fakeConn struct {
	mu   sync.Mutex
	cmds []string
	sent chan struct{}
}

var _ Doer = (*fakeConn)(nil)

func (c *fakeConn) DoAll(_ context.Context, cmds ...string) ([]*controlmode.Reply, error) {
	c.mu.Lock()
	c.cmds = append(c.cmds, cmds...)
	c.mu.Unlock()
	select {
	case c.sent <- struct{}{}:
	default:
	}
	return nil, nil
}

func (c *fakeConn) commands() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.cmds...)
}

// waitFor waits (generously) until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestStatusLineWritesChangesOnly(t *testing.T) {
	conn := &fakeConn{sent: make(chan struct{}, 1)}
	var mu sync.Mutex
	line := map[string]string{"w": "[a: READY]"}
	s, err := NewStatusLine(StatusConfig{
		Workspaces: func() []string { return []string{"w"} },
		Line:       func(ws string) string { mu.Lock(); defer mu.Unlock(); return line[ws] },
		Conn: func(ws string) (Doer, error) {
			if ws != "w" {
				return nil, errors.New("no such workspace")
			}
			return conn, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// NewStatusLine marks every workspace: the line is set once.
	waitFor(t, "the first line", func() bool { return len(conn.commands()) == 2 })
	cmds := conn.commands()
	if !strings.Contains(cmds[0], "status-right-length 40") || !strings.Contains(cmds[1], `status-right '[a: READY]'`) ||
		!strings.Contains(cmds[1], "=agents_w:") {
		t.Fatalf("commands %q", cmds)
	}
	// An unchanged line is not written again.
	s.Mark("w")
	mu.Lock()
	line["w"] = "[a: BUSY #1]"
	mu.Unlock()
	s.Mark("w")
	waitFor(t, "the changed line", func() bool { return len(conn.commands()) == 4 })
	if got := conn.commands()[3]; !strings.Contains(got, `'[a: BUSY ##1]'`) {
		t.Fatalf("changed line %q", got)
	}
	s.Mark("w")
	s.Close()
	s.Close() // idempotent
	if n := len(conn.commands()); n != 4 {
		t.Fatalf("%d commands after an unchanged mark, want 4: %q", n, conn.commands())
	}
	s.Mark("w") // after Close: never blocks
}

func TestStatusLineNeedsItsInputs(t *testing.T) {
	if _, err := NewStatusLine(StatusConfig{}); err == nil {
		t.Fatal("no error for an empty config")
	}
	if _, err := New(Config{Status: &StatusConfig{Line: func(string) string { return "" }}}); err == nil {
		t.Fatal("New: no error for a status line without Workspaces and Conn")
	}
	var s *StatusLine
	s.Mark("w") // nil: no status line
	s.Close()
}

// When the daemon stops, a status line it wrote says so: it becomes the command that reads
// the status files (`nudge status --short`, stale-marked), or without one the last line
// marked stale (before: the last line stayed, read as live).
func TestStatusLineLeftSayingDown(t *testing.T) {
	for _, tc := range []struct {
		name string
		down func(string) string
		want string
	}{
		{"Command", func(ws string) string { return "/usr/bin/nudge status --short --workspace " + ws },
			`status-right '#(/usr/bin/nudge status --short --workspace w)'`},
		{"Stale", func(string) string { return "" }, `status-right '(stale `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := &fakeConn{sent: make(chan struct{}, 1)}
			s, err := NewStatusLine(StatusConfig{
				Workspaces: func() []string { return []string{"w"} },
				Line:       func(string) string { return "[a: READY]" },
				Conn:       func(string) (Doer, error) { return conn, nil },
				Down:       tc.down,
			})
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the line written", func() bool { return len(conn.commands()) == 2 })
			s.Close()
			cmds := conn.commands()
			if len(cmds) != 4 || !strings.Contains(cmds[3], tc.want) {
				t.Fatalf("commands: %q, want the last to hold %q", cmds, tc.want)
			}
			if tc.name == "Stale" && !strings.HasSuffix(cmds[3], `) [a: READY]'`) {
				t.Errorf("stale line: %q", cmds[3])
			}
		})
	}
}
