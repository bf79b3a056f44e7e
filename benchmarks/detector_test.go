package benchmarks

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/detector"
	"github.com/nudgehq/nudge/panes"
	"github.com/nudgehq/nudge/store"
)

// The live detector figures need real tmux and take minutes; run them by hand:
//
//	NUDGE_BENCH_DETECTOR=1 go test -run TestDetectorFigures -v -timeout 15m ./benchmarks
func detectorGate(t *testing.T) {
	if os.Getenv("NUDGE_BENCH_DETECTOR") == "" {
		t.Skip("set NUDGE_BENCH_DETECTOR=1 to measure the live detector")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
}

type detEnv struct {
	t    *testing.T
	sock string
	reg  *panes.Registry
	mon  *detector.Monitor

	mu      sync.Mutex
	lastOut map[string]time.Time
	onBusy  func(id string, busy bool, at time.Time)
	onReady func(id string, state nudge.Readiness, at time.Time)
}

func newDetEnv(t *testing.T, quiet time.Duration) *detEnv {
	e := &detEnv{t: t, sock: fmt.Sprintf("nudge-bench-det-%d", os.Getpid()), lastOut: map[string]time.Time{}}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", e.sock, "kill-server").Run() })
	db, err := store.Open(filepath.Join(t.TempDir(), "nudge.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	pcfg := panes.DefaultConfig()
	pcfg.SocketName, pcfg.ConfigFile, pcfg.Roots = e.sock, "/dev/null", []string{t.TempDir()}
	bus := nudge.NewBus()
	t.Cleanup(bus.Close) // last: after the monitor and the registry
	bus.ReadOutput(e)    // before the monitor's: a chunk's time is taken before it sees it
	pcfg.Bus = bus
	reg, err := panes.Open(context.Background(), pcfg, db)
	if err != nil {
		t.Fatal(err)
	}
	e.reg = reg
	t.Cleanup(func() { reg.Close() })
	cfg := detector.DefaultMonitorConfig()
	cfg.Registry, cfg.SocketName, cfg.QuietWindow = reg, e.sock, quiet
	cfg.Bus = bus
	nudge.Subscribe(nudge.NewClient(bus, "bench", 64), func(ev nudge.ReadinessChanged) {
		now := time.Now() // as a subscriber of the daemon's sees it
		e.mu.Lock()
		fb, fr := e.onBusy, e.onReady
		e.mu.Unlock()
		if fb != nil {
			fb(ev.RuntimeID, ev.OperatorBusy, now)
		}
		if fr != nil {
			fr(ev.RuntimeID, ev.Readiness, now)
		}
	})
	mon, err := detector.NewMonitor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.mon = mon
	t.Cleanup(func() { mon.Close() })
	return e
}

// PaneOutput notes when a pane last printed (nudge.OutputReader).
func (e *detEnv) PaneOutput(id string, _ []byte) {
	now := time.Now()
	e.mu.Lock()
	e.lastOut[id] = now
	e.mu.Unlock()
}

func (e *detEnv) spawn(role string, argv ...string) nudge.Runtime {
	rt, err := e.reg.Spawn(context.Background(), panes.SpawnRequest{Workspace: "bench", Role: role, Agent: "shell", Argv: argv})
	if err != nil {
		e.t.Fatal(err)
	}
	return rt
}

func (e *detEnv) waitFor(what string, d time.Duration, cond func() bool) {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func TestDetectorFigures(t *testing.T) {
	detectorGate(t)
	t.Run("KeyToOperatorBusy", func(t *testing.T) {
		e := newDetEnv(t, 150*time.Millisecond)
		rt := e.spawn("keys", "cat")
		cmd := exec.Command("tmux", "-L", e.sock, "attach-session", "-t", rt.TmuxSession+":"+rt.TmuxWindow)
		cmd.Env = append(os.Environ(), "TERM=xterm-256color")
		ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
		if err != nil {
			t.Fatal(err)
		}
		go io.Copy(io.Discard, ptmx) //nolint:errcheck
		defer func() { ptmx.Close(); cmd.Process.Kill(); cmd.Wait() }()
		var persisted atomic.Int64
		e.mu.Lock()
		e.onBusy = func(id string, busy bool, at time.Time) {
			if id == rt.RuntimeID && busy {
				persisted.Store(at.UnixNano())
			}
		}
		e.mu.Unlock()
		time.Sleep(2 * time.Second) // attach settles, Any binding installed
		var mem, disk []time.Duration
		for i := 0; i < 120; i++ {
			e.waitFor("not busy", 30*time.Second, func() bool {
				busy, _, _ := e.mon.Collision(mustGet(t, e.reg, rt.RuntimeID))
				return !busy && !mustGet(t, e.reg, rt.RuntimeID).OperatorBusy
			})
			persisted.Store(0)
			start := time.Now()
			ptmx.Write([]byte{'a' + byte(i%26)})
			e.waitFor("busy", 10*time.Second, func() bool {
				busy, _, _ := e.mon.Collision(mustGet(t, e.reg, rt.RuntimeID))
				return busy
			})
			mem = append(mem, time.Since(start))
			e.waitFor("persisted", 10*time.Second, func() bool { return persisted.Load() != 0 })
			disk = append(disk, time.Duration(persisted.Load()-start.UnixNano()))
		}
		t.Logf("key -> Collision busy (in memory): n=%d p50=%v p95=%v max=%v", len(mem), pct(mem, 50), pct(mem, 95), pct(mem, 100))
		t.Logf("key -> operator_busy persisted:    n=%d p50=%v p95=%v max=%v", len(disk), pct(disk, 50), pct(disk, 95), pct(disk, 100))
	})
	t.Run("QuietToReady", func(t *testing.T) {
		e := newDetEnv(t, 20*time.Second)
		rt := e.spawn("ready", "bash", "--norc", "--noprofile")
		ready := make(chan time.Time, 16)
		e.mu.Lock()
		e.onReady = func(id string, st nudge.Readiness, at time.Time) {
			if id == rt.RuntimeID && st == nudge.Ready {
				select {
				case ready <- at:
				default:
				}
			}
		}
		e.mu.Unlock()
		e.waitFor("first READY", 30*time.Second, func() bool { return mustGet(t, e.reg, rt.RuntimeID).Readiness == "READY" })
		var lat []time.Duration
		for i := 0; i < 30; i++ {
			for len(ready) > 0 {
				<-ready
			}
			exec.Command("tmux", "-L", e.sock, "send-keys", "-t", rt.PaneID, "sleep 0.3; echo step", "Enter").Run()
			at := <-ready
			e.mu.Lock()
			last := e.lastOut[rt.RuntimeID]
			e.mu.Unlock()
			lat = append(lat, at.Sub(last))
		}
		t.Logf("last output -> READY (profile ready_quiet 300ms included): n=%d p50=%v p95=%v max=%v",
			len(lat), pct(lat, 50), pct(lat, 95), pct(lat, 100))
	})
	t.Run("IdleCPU50Panes", func(t *testing.T) {
		e := newDetEnv(t, 20*time.Second)
		var rts []nudge.Runtime
		for i := 0; i < 50; i++ {
			rts = append(rts, e.spawn(fmt.Sprintf("idle%02d", i), "bash", "--norc", "--noprofile"))
		}
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var notReady []string
			for _, rt := range rts {
				if got := mustGet(t, e.reg, rt.RuntimeID); got.Readiness != "READY" {
					notReady = append(notReady, got.PaneID+"="+string(got.Readiness)+"/"+string(got.Status))
				}
			}
			if len(notReady) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("not READY: %v", notReady)
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(2 * time.Second)
		before, srvBefore := rusage(t), serverCPU(e.sock)
		time.Sleep(30 * time.Second)
		after, srvAfter := rusage(t), serverCPU(e.sock)
		t.Logf("50 idle panes, 30s: daemon CPU user=%v sys=%v (%.3f%% of one core); tmux server CPU %v",
			after[0]-before[0], after[1]-before[1],
			100*float64(after[0]-before[0]+after[1]-before[1])/float64(30*time.Second), srvAfter-srvBefore)
	})
}

func mustGet(t *testing.T, reg *panes.Registry, id string) nudge.Runtime {
	rt, ok := reg.Get(id)
	if !ok {
		t.Fatalf("runtime %s gone", id)
	}
	return rt
}

func rusage(t *testing.T) [2]time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return [2]time.Duration{time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())}
}

// serverCPU is the tmux server's user+sys CPU from /proc (0 if unavailable).
func serverCPU(sock string) time.Duration {
	out, err := exec.Command("tmux", "-L", sock, "display-message", "-p", "#{pid}").Output()
	if err != nil {
		return 0
	}
	var pid int
	fmt.Sscan(string(out), &pid)
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	var f [17]string
	// fields after the ")" of comm: state is field 3; utime 14, stime 15 (1-based).
	s := string(data)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ')' {
			s = s[i+2:]
			break
		}
	}
	n, _ := fmt.Sscan(s, &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10], &f[11], &f[12], &f[13], &f[14], &f[15])
	if n < 13 {
		return 0
	}
	var ut, st int64
	fmt.Sscan(f[14], &ut)
	fmt.Sscan(f[15], &st)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ 100
}
