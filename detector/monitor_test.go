package detector

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/panes"
	"github.com/nudgehq/nudge/store"
)

var sockSeq atomic.Int64

// liveEnv is one test's private tmux server, store, panes.Registry and Monitor.
type liveEnv struct {
	t    *testing.T
	sock string
	reg  *panes.Registry
	mon  *Monitor
	fwd  atomic.Pointer[Monitor] // mon, for the bus subscriber

	mu        sync.Mutex
	quiet     []string
	humanDone []string
	changes   int
}

// syncBuffer is a log's output, written from many goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newLiveEnv starts a registry on a private server; mod adjusts the MonitorConfig.
func newLiveEnv(t *testing.T, mod func(*MonitorConfig)) *liveEnv {
	t.Helper()
	return newLiveEnvPanes(t, nil, mod)
}

// newLiveEnvPanes is newLiveEnv with pmod adjusting the registry's config too.
func newLiveEnvPanes(t *testing.T, pmod func(*panes.Config), mod func(*MonitorConfig)) *liveEnv {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	e := &liveEnv{t: t, sock: fmt.Sprintf("nudge-t-det-%d-%d", os.Getpid(), sockSeq.Add(1))}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", e.sock, "kill-server").Run() })
	db, err := store.Open(filepath.Join(t.TempDir(), "nudge.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	pcfg := panes.DefaultConfig()
	pcfg.SocketName, pcfg.ConfigFile = e.sock, "/dev/null"
	pcfg.Roots = []string{t.TempDir()}
	bus := nudge.NewBus()
	t.Cleanup(bus.Close) // last: after the Monitor and the registry
	pcfg.Bus = bus
	logs := &syncBuffer{}
	pcfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "panes", Output: logs, Level: hclog.Debug})
	t.Cleanup(func() { // the registry's and the Monitor's log, when a test failed
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	})
	if pmod != nil {
		pmod(&pcfg)
	}
	reg, err := panes.Open(context.Background(), pcfg, db)
	if err != nil {
		t.Fatal(err)
	}
	e.reg = reg
	t.Cleanup(func() { reg.Close() })

	cfg := DefaultMonitorConfig()
	cfg.Registry, cfg.SocketName = reg, e.sock
	cfg.QuietWindow = 500 * time.Millisecond
	cfg.Bus = bus
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "monitor", Output: logs, Level: hclog.Debug})
	news := nudge.NewClient(bus, "test", 64)
	nudge.Subscribe(news, func(ev nudge.OperatorQuiet) { e.mu.Lock(); e.quiet = append(e.quiet, ev.RuntimeID); e.mu.Unlock() })
	nudge.Subscribe(news, func(ev nudge.HumanDone) {
		e.mu.Lock()
		e.humanDone = append(e.humanDone, ev.Runtime.RuntimeID)
		e.mu.Unlock()
		if m := e.fwd.Load(); m != nil {
			m.HumanTaken(ev.Runtime.RuntimeID) // as the pipeline does
		}
	})
	nudge.Subscribe(news, func(nudge.ReadinessChanged) { e.mu.Lock(); e.changes++; e.mu.Unlock() })
	if mod != nil {
		mod(&cfg)
	}
	mon, err := NewMonitor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.mon = mon
	e.fwd.Store(mon)
	t.Cleanup(func() { mon.Close() })
	return e
}

// onReadiness calls fn with every readiness the Monitor publishes on its bus.
func onReadiness(c *MonitorConfig, fn func(id string, c Classification, busy bool)) {
	nudge.Subscribe(nudge.NewClient(c.Bus, "readiness", 64), func(ev nudge.ReadinessChanged) {
		fn(ev.RuntimeID, Classification{State: ev.Readiness, Summary: ev.Summary, ActionsNeeded: ev.ActionsNeeded, Dialog: ev.Dialog}, ev.OperatorBusy)
	})
}

// spawnShell starts a bash pane with PS1='$ ' and waits for it to be READY.
func (e *liveEnv) spawnShell(role string) nudge.Runtime {
	e.t.Helper()
	rt, err := e.reg.Spawn(context.Background(), panes.SpawnRequest{
		Workspace: "ws", Role: role, Agent: "shell", Argv: []string{"bash", "--norc", "--noprofile"}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.tmux("send-keys", "-t", rt.PaneID, "PS1='$ '", "Enter", "clear", "Enter")
	e.waitReadiness(rt.RuntimeID, nudge.Ready)
	return rt
}

func (e *liveEnv) tmux(args ...string) string {
	e.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", e.sock}, args...)...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

// waitFor polls cond with a generous deadline (the machine is loaded).
func (e *liveEnv) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *liveEnv) rt(id string) nudge.Runtime {
	rt, ok := e.reg.Get(id)
	if !ok {
		e.t.Fatalf("runtime %s gone", id)
	}
	return rt
}

// waitReadiness waits until both the persisted and the live readiness are want.
func (e *liveEnv) waitReadiness(id string, want nudge.Readiness) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("%s %s", id, want), func() bool {
		rt := e.rt(id)
		return rt.Readiness == want && e.mon.Readiness(rt) == want
	})
}

func (e *liveEnv) count(list *[]string, id string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, x := range *list {
		if x == id {
			n++
		}
	}
	return n
}

// human is a real tmux client attached through a PTY.
type human struct {
	t    *testing.T
	ptmx *os.File
	cmd  *exec.Cmd
}

func (e *liveEnv) attach(rt nudge.Runtime) *human {
	e.t.Helper()
	cmd := exec.Command("tmux", "-L", e.sock, "attach-session", "-t", rt.TmuxSession+":"+rt.TmuxWindow)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		e.t.Fatal(err)
	}
	go io.Copy(io.Discard, ptmx) //nolint:errcheck // drains the client's screen until close
	h := &human{t: e.t, ptmx: ptmx, cmd: cmd}
	e.t.Cleanup(h.close)
	e.waitFor("client attached", func() bool {
		return strings.Contains(e.tmux("list-clients", "-F", "#{client_control_mode}"), "0")
	})
	return h
}

// typeKeys writes keys into the client's terminal one character at a time, as a terminal
// sends them (a UTF-8 character's bytes together: tmux 3.5a drops one split across reads).
func (h *human) typeKeys(s string) {
	for len(s) > 0 {
		_, n := utf8.DecodeRuneInString(s)
		if _, err := h.ptmx.Write([]byte(s[:n])); err != nil {
			h.t.Fatal(err)
		}
		s = s[n:]
		time.Sleep(15 * time.Millisecond)
	}
}

func (h *human) close() {
	h.ptmx.Close()
	if h.cmd.Process != nil {
		h.cmd.Process.Kill()
	}
	h.cmd.Wait() //nolint:errcheck // killed on purpose
}

func TestReadinessLive(t *testing.T) {
	e := newLiveEnv(t, nil)
	rt := e.spawnShell("sh")

	t.Run("Busy", func(t *testing.T) {
		e.tmux("send-keys", "-t", rt.PaneID, "-l",
			`for i in 1 2 3 4 5 6 7 8 9 10; do echo "$((i*10))% done"; sleep 0.5; done`)
		e.tmux("send-keys", "-t", rt.PaneID, "Enter")
		e.waitReadiness(rt.RuntimeID, nudge.Busy)
		e.waitReadiness(rt.RuntimeID, nudge.Ready)
		e.tmux("send-keys", "-t", rt.PaneID, "sleep 5", "Enter")
		e.waitReadiness(rt.RuntimeID, nudge.Busy)
		e.waitReadiness(rt.RuntimeID, nudge.Ready)
	})
	t.Run("NeedsConfirmation", func(t *testing.T) {
		e.tmux("send-keys", "-t", rt.PaneID, "-l", `read -p 'Allow? (y/N) ' x`)
		e.tmux("send-keys", "-t", rt.PaneID, "Enter")
		e.waitReadiness(rt.RuntimeID, nudge.NeedsConfirmation)
		if s := e.rt(rt.RuntimeID).Summary; !strings.Contains(s, "Allow?") {
			t.Errorf("summary %q, want the question", s)
		}
		e.tmux("send-keys", "-t", rt.PaneID, "n", "Enter")
		e.waitReadiness(rt.RuntimeID, nudge.Ready)
	})
	t.Run("OldErrorAboveFreshPrompt", func(t *testing.T) {
		if _, err := exec.LookPath("python3"); err != nil {
			t.Skip("python3 not installed")
		}
		e.tmux("send-keys", "-t", rt.PaneID, "-l", `python3 -c 'import time; time.sleep(1); raise ValueError("bad")'`)
		e.tmux("send-keys", "-t", rt.PaneID, "Enter")
		e.waitFor("traceback on screen", func() bool {
			return strings.Contains(e.tmux("capture-pane", "-p", "-t", rt.PaneID), "ValueError: bad")
		})
		e.waitReadiness(rt.RuntimeID, nudge.Ready)
	})
	t.Run("OperatorNotBusy", func(t *testing.T) {
		if got := e.rt(rt.RuntimeID); got.OperatorBusy {
			t.Fatal("program output and test send-keys set operator_busy")
		}
		if busy, _, why := e.mon.Collision(e.rt(rt.RuntimeID)); busy {
			t.Fatalf("Collision busy (%s) without a human", why)
		}
	})
}

func TestHumanTyping(t *testing.T) {
	e := newLiveEnv(t, nil)
	rt := e.spawnShell("sh")
	h := e.attach(rt)
	e.waitFor("Any binding installed", func() bool { return e.mon.keysBound("") })
	// tmux starts a client's activity at its attach: output the shell writes within that
	// second is taken for the new client's typing where keys are seen from output (tmux 3.2
	// for keys not bound one by one). That is not what this test is about: let it pass.
	e.waitFor("no human seen yet", func() bool {
		busy, _, _ := e.mon.Collision(e.rt(rt.RuntimeID))
		return !busy && !e.rt(rt.RuntimeID).OperatorBusy
	})

	// nudge's own typing through the control connection is not a human.
	conn, err := e.reg.Conn(rt.WorkspaceID)
	if err != nil {
		t.Fatal(err)
	}
	e.mon.Injecting(rt.RuntimeID, time.Now().Add(time.Second))
	if _, err := conn.DoAll(context.Background(), controlmode.SendKeys(rt.PaneID, "echo ours-$((6*7))\r")...); err != nil {
		t.Fatal(err)
	}
	e.waitFor("injected command ran", func() bool {
		return strings.Contains(e.tmux("capture-pane", "-p", "-t", rt.PaneID), "ours-42")
	})
	e.waitReadiness(rt.RuntimeID, nudge.Ready)
	if e.rt(rt.RuntimeID).OperatorBusy {
		t.Fatal("nudge's own send-keys set operator_busy")
	}

	before := time.Now()
	h.typeKeys("echo hi\r")
	e.waitFor("operator_busy persisted", func() bool { return e.rt(rt.RuntimeID).OperatorBusy })
	busy, until, why := e.mon.Collision(e.rt(rt.RuntimeID))
	if busy {
		if lo, hi := before.Add(e.mon.cfg.QuietWindow), time.Now().Add(e.mon.cfg.QuietWindow); !until.IsZero() &&
			(until.Before(lo) || until.After(hi)) {
			t.Errorf("until %v not within [%v, %v]", until, lo, hi)
		}
		t.Logf("collision: %s until %v", why, until)
	}
	e.waitFor("operator_busy cleared", func() bool { return !e.rt(rt.RuntimeID).OperatorBusy })
	e.waitFor("OperatorQuiet and HumanDone", func() bool {
		return e.count(&e.quiet, rt.RuntimeID) > 0 && e.count(&e.humanDone, rt.RuntimeID) > 0
	})
	if busy, _, why := e.mon.Collision(e.rt(rt.RuntimeID)); busy {
		t.Fatalf("still busy after the quiet window: %s", why)
	}
}

func TestHumanDraft(t *testing.T) {
	e := newLiveEnv(t, nil)
	rt := e.spawnShell("sh")
	h := e.attach(rt)
	e.waitFor("Any binding installed", func() bool { return e.mon.keysBound("") })

	h.typeKeys("echo half-typed")
	e.waitFor("operator_busy", func() bool { return e.rt(rt.RuntimeID).OperatorBusy })
	// Well past the 500ms quiet window the draft still holds the pane.
	e.waitFor("draft seen", func() bool {
		_, _, why := e.mon.Collision(e.rt(rt.RuntimeID))
		return why == "draft in composer"
	})
	time.Sleep(2 * e.mon.cfg.QuietWindow)
	if busy, until, why := e.mon.Collision(e.rt(rt.RuntimeID)); !busy || !until.IsZero() {
		t.Fatalf("draft: Collision = %v, %v, %q; want busy until unknown", busy, until, why)
	}
	if !e.rt(rt.RuntimeID).OperatorBusy {
		t.Fatal("operator_busy dropped while a draft is in the composer")
	}
	d, err := e.mon.Composer(context.Background(), e.rt(rt.RuntimeID))
	if err != nil || d != "echo half-typed" {
		t.Fatalf("Composer = %q, %v", d, err)
	}
	if e.count(&e.humanDone, rt.RuntimeID) != 0 {
		t.Fatal("HumanDone published while the draft is there")
	}

	h.typeKeys("\x15") // the human's own C-u
	e.waitFor("draft cleared, operator_busy released", func() bool {
		busy, _, _ := e.mon.Collision(e.rt(rt.RuntimeID))
		return !busy && !e.rt(rt.RuntimeID).OperatorBusy
	})
	e.waitFor("HumanDone", func() bool { return e.count(&e.humanDone, rt.RuntimeID) > 0 })
}

func TestHumanFallback(t *testing.T) {
	e := newLiveEnv(t, func(c *MonitorConfig) { c.BindKeys = false })
	rt := e.spawnShell("sh")
	h := e.attach(rt)
	if out := e.tmux("list-keys", "-T", "root"); strings.Contains(out, HumanChannel) {
		t.Fatalf("keys bound with BindKeys false: %s", out)
	}
	h.typeKeys("echo fallback\r")
	e.waitFor("operator_busy from %output + list-clients", func() bool { return e.rt(rt.RuntimeID).OperatorBusy })
	e.waitFor("operator_busy cleared", func() bool { return !e.rt(rt.RuntimeID).OperatorBusy })
}

func TestCopyModeIsHuman(t *testing.T) {
	e := newLiveEnv(t, nil)
	rt := e.spawnShell("sh")
	e.tmux("copy-mode", "-t", rt.PaneID)
	e.waitFor("copy mode counts as a human", func() bool {
		busy, _, why := e.mon.Collision(e.rt(rt.RuntimeID))
		return busy && why == "pane in copy mode" && e.rt(rt.RuntimeID).OperatorBusy
	})
	e.tmux("send-keys", "-t", rt.PaneID, "-X", "cancel")
	e.waitFor("copy mode left", func() bool {
		busy, _, _ := e.mon.Collision(e.rt(rt.RuntimeID))
		return !busy && !e.rt(rt.RuntimeID).OperatorBusy
	})
}

// rootBinding returns the root-table binding of key as list-keys prints it, "" if unbound
// (list-keys -T root KEY cannot tell: tmux 3.7 prints nothing for a bound key).
func (e *liveEnv) rootBinding(key string) string {
	out := e.tmux("list-keys", "-T", "root")
	for _, l := range strings.Split(out, "\n") {
		if _, ok := rootKeys(l)[key]; ok {
			return l
		}
	}
	return ""
}

func (e *liveEnv) caps() controlmode.Caps {
	return controlmode.ParseVersion(e.tmux("display-message", "-p", "#{version}"))
}

func TestAnyBindingLifecycle(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newLiveEnv(t, nil)
		e.spawnShell("sh")
		e.tmux("bind-key", "-n", "M-a", "display-message user-m-a")
		e.waitFor("key binding installed", func() bool { return e.mon.keysBound("") })
		if e.caps().RepeatKey() {
			if b := e.rootBinding("Any"); !strings.Contains(b, "wait-for -S "+HumanChannel) {
				t.Fatalf("Any binding: %q", b)
			}
		} else {
			// tmux 3.2: each key on its own, Any left unbound so other keys pass.
			if b := e.rootBinding("a"); !strings.Contains(b, "send-keys a") || !strings.Contains(b, "wait-for -S "+HumanChannel) {
				t.Fatalf("binding of a: %q", b)
			}
			if b := e.rootBinding("Any"); b != "" {
				t.Fatalf("Any bound on tmux %s: %q", e.caps(), b)
			}
		}
		if b := e.rootBinding("M-a"); !strings.Contains(b, "user-m-a") {
			t.Fatalf("the user's M-a binding changed: %q", b)
		}
		e.mon.Close()
		if out := e.tmux("list-keys", "-T", "root"); strings.Contains(out, HumanChannel) {
			t.Fatalf("still bound after Close: %s", out)
		}
		if b := e.rootBinding("M-a"); !strings.Contains(b, "user-m-a") {
			t.Fatalf("the user's M-a binding changed by Close: %q", b)
		}
	})
	t.Run("ServerRestarted", func(t *testing.T) {
		// The tmux server is killed and a new one started: the binding is installed on it.
		e := newLiveEnv(t, nil)
		e.spawnShell("sh")
		e.waitFor("key binding installed", func() bool { return e.mon.keysBound("") })
		e.tmux("kill-server")
		// A spawn while the old server is still exiting fails ("server exited
		// unexpectedly"): wait until no server answers.
		e.waitFor("old server gone", func() bool {
			return exec.Command("tmux", "-L", e.sock, "list-sessions").Run() != nil
		})
		rt := e.spawnShell("sh2")
		e.waitFor("key binding installed on the new server", func() bool {
			return e.mon.keysBound("") && strings.Contains(e.tmux("list-keys", "-T", "root"), HumanChannel)
		})
		h := e.attach(rt)
		h.typeKeys("echo again\r")
		e.waitFor("the human's command ran", func() bool {
			return strings.Contains(e.tmux("capture-pane", "-p", "-t", rt.PaneID), "\nagain")
		})
	})
	t.Run("UserBinding", func(t *testing.T) {
		e := newLiveEnv(t, func(c *MonitorConfig) { c.BindKeys = false })
		e.spawnShell("sh")
		e.tmux("bind-key", "-n", "Any", "send-keys ; display-message user-any")
		e.mon.Close()
		// A second Monitor with BindKeys finds the user's binding and leaves it alone.
		cfg := e.mon.cfg
		cfg.BindKeys = true
		m, err := NewMonitor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		e.waitFor("binding decision", func() bool {
			h := m.watch("")
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.tried
		})
		if m.keysBound("") {
			t.Fatal("took over the user's Any binding")
		}
		m.Close()
		if b := e.rootBinding("Any"); !strings.Contains(b, "user-any") {
			t.Fatalf("user binding changed: %q", b)
		}
		if out := e.tmux("list-keys", "-T", "root"); strings.Contains(out, HumanChannel) {
			t.Fatalf("bound beside the user's Any: %s", out)
		}
	})
}

// codexBinary finds a Codex CLI when NUDGE_TEST_CODEX is set: its value if it is a path,
// else the repository's npm cache.
func codexBinary() string {
	p := os.Getenv("NUDGE_TEST_CODEX")
	if p == "" {
		return ""
	}
	if p != "1" {
		return p
	}
	p, err := filepath.Abs(filepath.Join("..", ".cache", "npm", "node_modules", ".bin", "codex"))
	if err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func TestCodexLive(t *testing.T) {
	bin := codexBinary()
	if bin == "" {
		t.Skip("set NUDGE_TEST_CODEX=1 (Codex under .cache/npm) or =/path/to/codex to test the real composer")
	}
	// A private, logged-in Codex home with the working folder trusted (as the live
	// classification test does), so the machine's own Codex state plays no part.
	home := t.TempDir()
	t.Cleanup(func() { killProcessesUnder(t, home) })
	codexHome := filepath.Join(home, ".codex")
	os.MkdirAll(codexHome, 0o700)
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", codexHome)
	// Launchers are checked: "codex" must resolve through PATH to this binary.
	t.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	login := exec.Command(bin, "login", "--with-api-key")
	login.Stdin = strings.NewReader("sk-nudge-test-dummy\n")
	if out, err := login.CombinedOutput(); err != nil {
		t.Fatalf("codex login: %v: %s", err, out)
	}
	wd, _ := os.Getwd()
	os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(fmt.Sprintf("[projects.%q]\ntrust_level = \"trusted\"\n", wd)), 0o600)
	e := newLiveEnv(t, nil)
	rt, err := e.reg.Spawn(context.Background(), panes.SpawnRequest{
		Workspace: "ws", Role: "codex", Agent: "codex", Argv: []string{"codex"}})
	if err != nil {
		t.Fatal(err)
	}
	var screen string
	e.waitFor("codex screen", func() bool {
		screen = e.tmux("capture-pane", "-p", "-t", rt.PaneID)
		return strings.Contains(screen, "Sign in") || strings.Contains(screen, "Trust") || strings.Contains(screen, "›")
	})
	t.Logf("codex screen:\n%s", screen)
	switch {
	case strings.Contains(screen, "Sign in"):
		t.Skip("codex is not signed in here (login screen); the composer cannot be reached")
	case strings.Contains(screen, "Trust"):
		e.waitReadiness(rt.RuntimeID, nudge.NeedsConfirmation)
		e.tmux("send-keys", "-t", rt.PaneID, "Enter")
	}
	e.waitReadiness(rt.RuntimeID, nudge.Ready)
}

// watch returns the key-event watch of nudge's tmux server on host.
func (m *Monitor) watch(host string) *humanWatch {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.human[serverKey(nudge.Runtime{Host: host})]
}

// keysBound reports whether host's binding (Any, or each key on tmux 3.2) is installed and ours.
func (m *Monitor) keysBound(host string) bool {
	h := m.watch(host)
	return h != nil && h.bound.Load()
}

// TestStreamingWakes: a pane that streams wakes its goroutine once per busy stretch, not
// once per %output chunk nor every ready_quiet while it streams (the quiet timer), and
// the quiet verdict still comes when the stream stops.
func TestStreamingWakes(t *testing.T) {
	e := newLiveEnv(t, nil)
	rt := e.spawnShell("sh")
	ps := e.mon.get(rt.RuntimeID)
	if ps == nil {
		t.Fatal("pane not watched")
	}
	e.waitFor("Any binding installed", func() bool { return e.mon.keysBound("") })
	e.waitReadiness(rt.RuntimeID, nudge.Ready)
	wakes0, chunks0, fires0 := ps.wakes.Load(), ps.outSeq.Load(), ps.quietFires.Load()
	e.tmux("send-keys", "-t", rt.PaneID, "-l", `for i in $(seq 300); do echo "line $i"; sleep 0.005; done`)
	e.tmux("send-keys", "-t", rt.PaneID, "Enter")
	e.waitFor("stream printed", func() bool {
		return strings.Contains(e.tmux("capture-pane", "-p", "-t", rt.PaneID), "line 300")
	})
	e.waitReadiness(rt.RuntimeID, nudge.Ready)
	wakes, chunks, fires := ps.wakes.Load()-wakes0, ps.outSeq.Load()-chunks0, ps.quietFires.Load()-fires0
	t.Logf("%d output chunks, %d wake-ups, %d quiet timer fires", chunks, wakes, fires)
	if chunks < 50 {
		t.Skipf("tmux coalesced the stream into %d chunks", chunks)
	}
	// One wake per stretch of output between quiet verdicts; a loaded machine may stall
	// the loop long enough for a few extra verdicts, never for one per chunk.
	if wakes*5 > chunks {
		t.Fatalf("%d wake-ups for %d output chunks", wakes, chunks)
	}
	// The quiet timer fires once per quiet spell: after each stretch a wake began, and
	// not while the stream keeps it pushed back (the stream lasts several ready_quiet;
	// it fired once each before). The slack is for a fire that raced a chunk.
	if fires > wakes+2 {
		t.Fatalf("%d quiet timer fires for %d stretches of output", fires, wakes)
	}
}
