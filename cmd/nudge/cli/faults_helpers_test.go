package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
)

// faultConfig is a daemon config for the fault tests (issue 8): short waits so a trigger
// to a dead pane ends within seconds, and no rate limit in the way.
func faultConfig(t *testing.T) daemon.Config {
	cfg := newTestConfig(t)
	cfg.Inject.RateLimit = 100000
	cfg.Inject.MaxDefer = 5 * time.Second
	cfg.Inject.AckTimeout = 3 * time.Second
	cfg.Inject.AckRetries = 1
	cfg.Inject.Backoff = []time.Duration{200 * time.Millisecond}
	cfg.Panes.SweepInterval = time.Second
	cfg.Chain.LaunchGrace = 300 * time.Millisecond
	return cfg
}

// catAgent spawns a shell runtime whose program appends every line it reads to a file
// (cooked tty: the echo is in the pane, the lines in the file); it returns the runtime
// and the file.
func (td *testDaemon) catAgent(ws, role string) (runtimeView, string) {
	td.t.Helper()
	file := filepath.Join(td.cfg.Panes.Roots[0], ws+"-"+role+".lines")
	rt := td.spawnShell(ws, role, "sh", "-c", "exec cat >> "+file)
	return rt, file
}

// fireTriggers posts n triggers named prefix-i to the given agents of ws concurrently
// and returns the ids the daemon accepted (an answer with a record).
func (td *testDaemon) fireTriggers(ws, prefix string, n int, agents ...string) []string {
	var mu sync.Mutex
	var ids []string
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("%s-%d", prefix, i)
			tr, err := td.trigger(map[string]any{"trigger_id": id, "workspace": ws,
				"agent": agents[i%len(agents)], "prompt": "fault prompt " + id})
			if err == nil && tr.TriggerID == id {
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ids
}

// waitAllClosed polls every trigger until it is closed (a final receipt) or a generous
// deadline passes, and returns the receipts.
func (td *testDaemon) waitAllClosed(ids []string, within time.Duration) map[string]nudge.Trigger {
	td.t.Helper()
	got := map[string]nudge.Trigger{}
	deadline := time.Now().Add(within)
	for {
		var open []string
		for _, id := range ids {
			if got[id].Closed {
				continue
			}
			var tr nudge.Trigger
			if err := td.c.do(t0(), "GET", "/v1/triggers/"+id, nil, &tr); err == nil {
				got[id] = tr
			}
			if !got[id].Closed {
				open = append(open, fmt.Sprintf("%s(%s %s %s)", id, got[id].State, got[id].ErrorCode, got[id].Message))
			}
		}
		if len(open) == 0 {
			return got
		}
		if time.Now().After(deadline) {
			td.t.Fatalf("%d triggers never reached a final receipt: %v", len(open), open)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runtimeAudit is the runtime's audit events with their codes, space separated.
func (td *testDaemon) runtimeAudit(id string) string {
	td.t.Helper()
	var recs []nudge.AuditRecord
	if err := td.c.do(t0(), "GET", "/v1/audit?runtime="+id, nil, &recs); err != nil {
		td.t.Fatal(err)
	}
	return coded(recs)
}

// coded is the records' events, space separated, each failure code in brackets after it.
func coded(recs []nudge.AuditRecord) string {
	var s []string
	for _, r := range recs {
		ev := r.Event
		if r.Code != "" {
			ev += "(" + string(r.Code) + ")"
		}
		s = append(s, ev)
	}
	return strings.Join(s, " ")
}

// waitFile polls a file until it holds want.
func waitFile(t *testing.T, file, want string, within time.Duration) {
	t.Helper()
	if !fileHolds(file, want, within) {
		b, _ := os.ReadFile(file)
		t.Fatalf("%s never held %q; it has %q", file, want, tail(string(b), 400))
	}
}

// fileHolds reports whether file comes to contain want within the time given.
func fileHolds(file, want string, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		if b, _ := os.ReadFile(file); strings.Contains(string(b), want) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(30 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// final reports whether a closed receipt is one of the final outcomes a fault allows:
// delivered (submitted or acked), or failed/fell back with a code.
func final(tr nudge.Trigger) bool {
	switch {
	case !tr.Closed:
		return false
	case tr.State == "acked" || tr.State == "submitted":
		return true
	default:
		return tr.ErrorCode != "" || tr.Fallback != ""
	}
}

// humanClient is an operator's terminal: `tmux attach` through a PTY of a fixed size.
type humanClient struct {
	cmd  *exec.Cmd
	ptmx *os.File
	pid  string // the tmux client process, as #{client_pid}
}

// attachHuman attaches a human client to session on the chaos daemon's server.
func (cd *chaosDaemon) attachHuman(session string, cols, rows uint16) *humanClient {
	cd.t.Helper()
	cmd := exec.Command("tmux", "-L", cd.tmuxSocket, "attach-session", "-t", session)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "TMUX=")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: cols})
	if err != nil {
		cd.t.Fatal(err)
	}
	copied := make(chan struct{})
	go func() { io.Copy(io.Discard, ptmx); close(copied) }() //nolint:errcheck // drains the screen
	h := &humanClient{cmd: cmd, ptmx: ptmx, pid: strconv.Itoa(cmd.Process.Pid)}
	cd.t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait() //nolint:errcheck // killed on purpose
		ptmx.Close()
		<-copied
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := cd.tmux("list-clients", "-F", "#{client_pid}")
		for _, pid := range strings.Fields(out) {
			if pid == h.pid {
				return h
			}
		}
		if time.Now().After(deadline) {
			cd.t.Fatalf("human client never attached: %q", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// humanSize returns the human client's "WxH" as tmux sees it, or "" if it is not attached.
func (cd *chaosDaemon) humanSize(h *humanClient) string {
	out, _ := cd.tmux("list-clients", "-F", "#{client_pid} #{client_width}x#{client_height}")
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == h.pid {
			return f[1]
		}
	}
	return ""
}

// metric scrapes one sample from the subprocess daemon's /metrics (-1 if absent).
func (cd *chaosDaemon) metric(name string) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := cd.c.send(ctx, "GET", "/metrics", nil)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// waitCatLine triggers a chaos daemon's cat agent and waits for the prompt in its file.
func (cd *chaosDaemon) triggerAndWait(id, agent, file string, within time.Duration) nudge.Trigger {
	cd.t.Helper()
	var tr nudge.Trigger
	if err := cd.call("POST", "/v1/triggers", map[string]any{"trigger_id": id, "workspace": "w1",
		"agent": agent, "prompt": "wake " + id}, &tr); err != nil {
		cd.t.Fatalf("trigger %s: %v", id, err)
	}
	got := cd.waitClosed([]string{id}, within)[id]
	if got.State != "acked" {
		cd.t.Fatalf("trigger %s: %+v\n%s", id, got, cd.logTail(3000))
	}
	waitFile(cd.t, file, "wake "+id, 10*time.Second)
	return got
}
