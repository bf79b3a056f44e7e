package inject

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// ctl is a minimal tmux -C client for tests: it writes command lines and reads
// the %begin/%end blocks that answer them.
type ctl struct {
	in    io.WriteCloser
	lines chan string
	seq   int
}

type block struct {
	body []string
	err  bool
}

func (s *tmuxServer) control(t *testing.T) *ctl {
	cmd := exec.Command("tmux", "-L", s.name, "-f", "/dev/null", "-C", "attach", "-t", "s")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &ctl{in: in, lines: make(chan string, 1024)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		in.Close()
		go func() { time.Sleep(10 * time.Second); cmd.Process.Kill() }()
		for range c.lines {
		}
		<-done
		cmd.Wait()
	})
	c.sync(t) // skip the attach's own output
	return c
}

// sync sends a display command with a fresh token and skips everything up to its reply.
func (c *ctl) sync(t *testing.T) {
	c.seq++
	tok := fmt.Sprintf("sync-%d", c.seq)
	c.write(t, []string{"display -p '" + tok + "'"})
	for {
		if b := c.block(t); len(b.body) == 1 && b.body[0] == tok {
			return
		}
	}
}

func (c *ctl) write(t *testing.T, cmds []string) {
	t.Helper()
	if _, err := io.WriteString(c.in, strings.Join(cmds, "\n")+"\n"); err != nil {
		t.Fatal(err)
	}
}

// block returns the next flags-1 reply block.
func (c *ctl) block(t *testing.T) block {
	t.Helper()
	var b block
	in := false
	for {
		var line string
		var ok bool
		select {
		case line, ok = <-c.lines:
		case <-time.After(20 * time.Second):
			t.Fatalf("no reply from tmux")
		}
		if !ok {
			t.Fatalf("control client ended")
		}
		f := strings.Fields(line)
		switch {
		case !in && len(f) == 4 && f[0] == "%begin":
			in, b = f[3] == "1", block{}
		case in && len(f) == 4 && (f[0] == "%end" || f[0] == "%error"):
			b.err = f[0] == "%error"
			return b
		case in:
			b.body = append(b.body, line)
		}
	}
}

// run sends cmds plus a display token in one write and checks that exactly one successful
// reply per command (two for an IfAlive guard: if-shell's and its branch's) comes before
// the token's: no command was split, chained or injected.
func (c *ctl) run(t *testing.T, cmds []string) {
	t.Helper()
	c.seq++
	tok := fmt.Sprintf("tok-%d", c.seq)
	c.write(t, append(cmds, "display -p '"+tok+"'"))
	for i, cmd := range cmds {
		blocks := 1
		if strings.HasPrefix(cmd, "if-shell -F ") {
			blocks = 2
		}
		for range blocks {
			if b := c.block(t); b.err || len(b.body) != 0 {
				t.Fatalf("reply %d to %.80q: error=%v body %q", i, cmd, b.err, b.body)
			}
		}
	}
	if b := c.block(t); b.err || len(b.body) != 1 || b.body[0] != tok {
		t.Fatalf("replies out of sync: got %q, want %q", b.body, tok)
	}
}

// checkClean checks that no window, paste buffer or user option was created.
func (c *ctl) checkClean(t *testing.T, pane string) {
	t.Helper()
	c.write(t, []string{"list-windows -a -F '#{window_id}'", "list-buffers -F '#{buffer_name}'"})
	if b := c.block(t); len(b.body) != 1 {
		t.Errorf("windows: %q", b.body)
	}
	if b := c.block(t); len(b.body) != 0 {
		t.Errorf("paste buffers left: %q", b.body)
	}
}
