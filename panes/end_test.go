package panes

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// Every hold ends: a program that ignores SIGHUP, SIGINT and SIGTERM, with a child that
// left the pane's session and daemonized (setsid -f: its parent exits, it is reparented
// away), is ended by pid on stop and on restart, and the audit says how. Before, C-c and
// kill-pane (SIGHUP) left both running.

// stubborn is the program: it writes its pid and its daemon child's to files in dir.
func stubborn(dir string) []string {
	loop := `trap "" HUP INT TERM; while :; do sleep 0.2; done`
	script := `trap "" HUP INT TERM; echo $$ > ` + dir + `/main.pid; ` +
		`setsid -f sh -c 'echo $$ > ` + dir + `/child.pid; ` + loop + `'; ` + loop
	return []string{"sh", "-c", script}
}

// endEnv is a registry with short waits: C-c for 300ms, then grace per signal (a
// second where the program must end: a loaded machine may take a while to reap it).
func endEnv(t *testing.T, grace time.Duration) *env {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	return newEnv(t, func(c *Config) {
		c.SweepInterval = time.Hour
		c.StopTimeout = 300 * time.Millisecond
		c.KillGrace = grace
	})
}

// stubbornPIDs waits for the program's two pids.
func (e *env) stubbornPIDs(dir string) []int {
	e.t.Helper()
	var pids []int
	e.waitFor("pid files", func() bool {
		pids = pids[:0]
		for _, f := range []string{"main.pid", "child.pid"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			n, err2 := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || err2 != nil || n <= 0 {
				return false
			}
			pids = append(pids, n)
		}
		return true
	})
	e.t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pids
}

// running reports the pids among pids that still run (a zombie has ended).
func running(pids []int) []int {
	var out []int
	for _, pid := range pids {
		if st, ok := readStat(pid); ok && st.state != 'Z' && st.state != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

func (e *env) endedDetail(recs []nudge.AuditRecord) Ended {
	e.t.Helper()
	if len(recs) != 1 {
		e.t.Fatalf("audit: got %d records, want 1: %+v", len(recs), recs)
	}
	var got Ended
	if err := json.Unmarshal(recs[0].Detail, &got); err != nil {
		e.t.Fatal(err)
	}
	return got
}

func TestStopEndsProgramIgnoringSignals(t *testing.T) {
	e := endEnv(t, time.Second)
	dir := t.TempDir()
	rt := e.spawn("ws", "stubborn", stubborn(dir)...)
	pids := e.stubbornPIDs(dir)
	if err := e.reg.Stop(context.Background(), rt.RuntimeID, "test"); err != nil {
		t.Fatal(err)
	}
	if left := running(pids); len(left) != 0 {
		t.Fatalf("stop returned with pid %v of %v still running", left, pids)
	}
	got := e.endedDetail(e.audit(rt.RuntimeID, "runtime_stopped"))
	if got.By != "SIGKILL" || !strings.HasPrefix(got.How, "ended by SIGKILL after ") {
		t.Errorf("audit: got %+v, want ended by SIGKILL", got)
	}
	for _, pid := range pids {
		if !strings.Contains(got.How, strconv.Itoa(pid)) {
			t.Errorf("audit %q does not name pid %d", got.How, pid)
		}
	}
	if st := e.status(rt.RuntimeID); st != nudge.StatusOffline || len(e.windows("ws")) != 0 {
		t.Errorf("after stop: status %s, windows %q", st, e.windows("ws"))
	}
}

func TestRestartEndsProgramIgnoringSignals(t *testing.T) {
	e := endEnv(t, time.Second)
	dir := t.TempDir()
	rt := e.spawn("ws", "stubborn", stubborn(dir)...)
	pids := e.stubbornPIDs(dir)
	for _, f := range []string{"main.pid", "child.pid"} {
		_ = os.Remove(filepath.Join(dir, f))
	}
	got, err := e.reg.Restart(context.Background(), rt.RuntimeID, "test")
	if err != nil {
		t.Fatal(err)
	}
	if left := running(pids); len(left) != 0 {
		t.Fatalf("restart returned with pid %v of %v still running", left, pids)
	}
	if got.PID == rt.PID || got.PaneID == rt.PaneID {
		t.Errorf("restart: got pid %d pane %s, want new ones", got.PID, got.PaneID)
	}
	// The new program runs (its own pids, which the cleanup kills).
	if next := e.stubbornPIDs(dir); len(running(next)) != 2 {
		t.Errorf("new program: %v not running", next)
	}
	ended := e.endedDetail(e.audit(rt.RuntimeID, "runtime_program_ended"))
	if ended.By != "SIGKILL" || len(ended.PIDs) < 2 {
		t.Errorf("audit: got %+v, want ended by SIGKILL, both pids", ended)
	}
}

// A program that cannot be ended (SIGKILL dropped, as for a process stuck in the
// kernel) fails the stop with STOP_FAILED and the restart with SPAWN_FAILED within the
// bound; nothing is launched over it, its pane stays.
func TestEndFailsWithinBound(t *testing.T) {
	e := endEnv(t, 300*time.Millisecond)
	e.reg.kill = func(pid int, sig syscall.Signal) error {
		if sig == syscall.SIGKILL {
			return nil
		}
		return syscall.Kill(pid, sig)
	}
	dir := t.TempDir()
	rt := e.spawn("ws", "stuck", stubborn(dir)...)
	pids := e.stubbornPIDs(dir)

	_, err := e.reg.Restart(context.Background(), rt.RuntimeID, "test")
	wantCode(t, err, nudge.SpawnFailed)
	if !strings.Contains(err.Error(), "did not end") {
		t.Errorf("restart error %q does not say the old program did not end", err)
	}
	if left := running(pids); len(left) != 2 {
		t.Fatalf("running: %v of %v", left, pids)
	}
	if got := e.endedDetail(e.audit(rt.RuntimeID, "runtime_end_failed")); !slices.Contains(got.Left, pids[0]) || !slices.Contains(got.Left, pids[1]) {
		t.Errorf("audit: got %+v, want pids %v left", got, pids)
	}
	if out, _ := e.tmux("list-panes", "-a", "-F", "#{pane_id}"); strings.TrimSpace(out) != rt.PaneID {
		t.Errorf("panes after a failed restart: %q, want only %s", out, rt.PaneID)
	}

	err = e.reg.Stop(context.Background(), rt.RuntimeID, "test")
	wantCode(t, err, nudge.StopFailed)
	got, _ := e.reg.Get(rt.RuntimeID)
	if got.Status != nudge.StatusFailed {
		t.Errorf("status after a failed stop: %s", got.Status)
	}
	if d := e.endedDetail(e.audit(rt.RuntimeID, "runtime_stop_failed")); !slices.Contains(d.Left, pids[1]) || d.By != "" {
		t.Errorf("stop audit: %+v", d)
	}
}

// A tmux server that stops answering (here: stopped with SIGSTOP) does not hold a stop:
// each tmux command fails after CommandTimeout, and the recorded pid, which proves to be
// the pane's process, is ended by signals. Before, the stop waited for tmux for good.
func TestStopWhenTmuxDoesNotAnswer(t *testing.T) {
	e := endEnv(t, time.Second)
	dir := t.TempDir()
	rt := e.spawn("ws", "stubborn", stubborn(dir)...)
	pids := e.stubbornPIDs(dir)
	// Spawned with the default tmux timeout (a loaded machine may be slow); the stop runs
	// on a registry reopened with a short one.
	e.reg.Close()
	e.cfg.CommandTimeout = 300 * time.Millisecond
	e.open()
	out, err := e.tmux("display-message", "-p", "#{pid}")
	server, _ := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || server <= 0 {
		t.Fatalf("server pid: %q %v", out, err)
	}
	if err := syscall.Kill(server, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(server, syscall.SIGCONT) })
	done := make(chan error, 1)
	began := time.Now()
	go func() { done <- e.reg.Stop(context.Background(), rt.RuntimeID, "test") }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("stop still waiting for tmux after 30s")
	}
	_ = syscall.Kill(server, syscall.SIGCONT)
	t.Logf("stop took %s", time.Since(began))
	if err != nil {
		t.Fatal(err)
	}
	if left := running(pids); len(left) != 0 {
		t.Fatalf("stop returned with pid %v of %v still running", left, pids)
	}
	got := e.endedDetail(e.audit(rt.RuntimeID, "runtime_stopped"))
	if !strings.Contains(got.How, "tmux did not answer") || got.By != "SIGKILL" {
		t.Errorf("audit: got %+v", got)
	}
	t.Logf("audit: %s", got.How)
}

// A program that crashed leaves its daemonized child behind: the automatic restart ends
// that child (found by the pane's environment on this tmux server) before it relaunches.
func TestCrashRestartEndsEscapedChild(t *testing.T) {
	e := endEnv(t, time.Second)
	dir := t.TempDir()
	script := `[ -e ` + dir + `/child.pid ] && exec sleep 600; ` +
		`setsid -f sh -c 'trap "" HUP INT TERM; echo $$ > ` + dir + `/child.pid; while :; do sleep 0.2; done'; sleep 0.5; exit 3`
	rt, err := e.reg.Spawn(context.Background(), SpawnRequest{Workspace: "ws", Role: "crashy", Agent: "shell", Argv: []string{"sh", "-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	var child int
	e.waitFor("child pid", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "child.pid"))
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return child > 0
	})
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	e.waitFor("restarted", func() bool {
		got, _ := e.reg.Get(rt.RuntimeID)
		return got.Restarts == 1 && got.Status == nudge.StatusReady
	})
	if left := running([]int{child}); len(left) != 0 {
		t.Fatalf("the crashed program's child %d still runs after the restart", child)
	}
	got := e.endedDetail(e.audit(rt.RuntimeID, "runtime_program_ended"))
	if got.By != "SIGKILL" || !slices.Contains(got.PIDs, child) {
		t.Errorf("audit: %+v", got)
	}
}

func TestParseStat(t *testing.T) {
	tail := " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 4242 0 0\n" // fields 7..24, the start time is 22
	for i, tt := range []struct {
		in   string
		want procStat
		ok   bool
	}{
		{"12 (sh) S 7 12 12" + tail, procStat{ppid: 7, state: 'S', start: 4242}, true},
		{"12 (a b) c) (d) Z 1 12 12" + tail, procStat{ppid: 1, state: 'Z', start: 4242}, true},
		{"12 (sh) S 7", procStat{}, false},
		{"12 sh S 7 12 12" + tail, procStat{}, false},
		{"", procStat{}, false},
	} {
		got, ok := parseStat([]byte(tt.in))
		if ok != tt.ok || got != tt.want {
			t.Errorf("#%d: got %+v %v, want %+v %v", i, got, ok, tt.want, tt.ok)
		}
	}
}

// A human closes the window of a program that ignores SIGHUP: the program outlives its
// pane. The automatic restart ends it (its recorded pid proves to be the closed pane's
// process) and its daemonized child before it starts the runtime again: with the tmux
// server still up (another window), and when the closed window was the server's last
// (the server exited; the program names it, and the restart starts a new one).
func TestClosedWindowLeftoversEnded(t *testing.T) {
	for _, lastWindow := range []bool{false, true} {
		t.Run(map[bool]string{false: "ServerUp", true: "ServerGone"}[lastWindow], func(t *testing.T) {
			e := endEnv(t, time.Second)
			if !lastWindow {
				e.spawn("ws", "keep", "cat")
			}
			dir := t.TempDir()
			rt := e.spawn("ws", "stubborn", stubborn(dir)...)
			pids := e.stubbornPIDs(dir)
			for _, f := range []string{"main.pid", "child.pid"} {
				_ = os.Remove(filepath.Join(dir, f))
			}
			if out, err := e.tmux("kill-window", "-t", "=agents_ws:stubborn"); err != nil {
				t.Fatalf("kill-window: %v %s", err, out)
			}
			e.waitFor("restarted", func() bool {
				got, _ := e.reg.Get(rt.RuntimeID)
				return got.Restarts == 1 && got.Status == nudge.StatusReady
			})
			if left := running(pids); len(left) != 0 {
				t.Fatalf("pid %v of the closed window's program still run after the restart", left)
			}
			e.stubbornPIDs(dir) // the new program's, killed at cleanup
			got := e.endedDetail(e.audit(rt.RuntimeID, "runtime_program_ended"))
			if got.By != "SIGKILL" || !slices.Contains(got.PIDs, pids[0]) || !slices.Contains(got.PIDs, pids[1]) {
				t.Errorf("audit: %+v, want ended by SIGKILL, pids %v", got, pids)
			}
		})
	}
}
