package panes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

var serverSeq atomic.Int64

// env is one test's private tmux server, store and registry.
type env struct {
	t    *testing.T
	cfg  Config
	db   *store.DB
	reg  *Registry
	root string

	mu      sync.Mutex
	changes []nudge.Runtime
}

func newEnv(t *testing.T, mod func(*Config)) *env {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	e := &env{t: t, root: t.TempDir()}
	sock := fmt.Sprintf("nudge-t-%d-%d", os.Getpid(), serverSeq.Add(1))
	bus := nudge.NewBus()
	t.Cleanup(bus.Close) // after the registry's Close (cleanups run last first)
	changes := nudge.NewClient(bus, "test", 64)
	nudge.Subscribe(changes, func(ev nudge.RuntimeChanged) { e.mu.Lock(); e.changes = append(e.changes, ev.Runtime); e.mu.Unlock() })
	e.cfg = Config{SocketName: sock, ConfigFile: "/dev/null", Roots: []string{e.root},
		SweepInterval: 200 * time.Millisecond, RestartDelay: 100 * time.Millisecond, StopTimeout: time.Second, Bus: bus}
	if mod != nil {
		mod(&e.cfg)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", sock, "kill-server").Run() })
	db, err := store.Open(filepath.Join(t.TempDir(), "nudge.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	e.db = db
	t.Cleanup(func() { db.Close() })
	e.open()
	return e
}

func (e *env) open() {
	e.t.Helper()
	reg, err := Open(context.Background(), e.cfg, e.db)
	if err != nil {
		e.t.Fatal(err)
	}
	e.reg = reg
	e.t.Cleanup(func() { reg.Close() })
}

func (e *env) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", e.cfg.SocketName}, args...)...).CombinedOutput()
	return string(out), err
}

func (e *env) windows(ws string) []string {
	out, err := e.tmux("list-windows", "-t", "="+SessionName(ws), "-F", "#{window_name}")
	if err != nil {
		return nil
	}
	return splitLines(out)
}

// waitFor polls cond with a generous deadline.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s; runtimes: %+v", what, e.reg.List())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) status(id string) nudge.Status {
	rt, _ := e.reg.Get(id)
	return rt.Status
}

func (e *env) spawn(ws, role string, argv ...string) nudge.Runtime {
	e.t.Helper()
	rt, err := e.reg.Spawn(context.Background(), SpawnRequest{Workspace: ws, Role: role, Agent: "shell", Argv: argv})
	if err != nil {
		e.t.Fatalf("spawn %s: %v", role, err)
	}
	e.waitFor(role+" ready", func() bool { return e.status(rt.RuntimeID) == nudge.StatusReady })
	got, _ := e.reg.Get(rt.RuntimeID)
	return got
}

// sawStatus reports whether a RuntimeChanged showed id in status s (and returns that record).
func (e *env) sawStatus(id string, s nudge.Status) (nudge.Runtime, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, rt := range e.changes {
		if rt.RuntimeID == id && rt.Status == s {
			return rt, true
		}
	}
	return nudge.Runtime{}, false
}

func (e *env) audit(id, event string) []nudge.AuditRecord {
	e.db.Flush() // the registry's writes are write-behind
	recs, err := e.db.AuditLog().Audit(store.AuditFilter{RuntimeID: id, Event: event})
	if err != nil {
		e.t.Fatal(err)
	}
	return recs
}

func TestSpawnTwoRolesKillRestart(t *testing.T) {
	// No sweep: the death must be seen through the pane_dead subscription.
	e := newEnv(t, func(c *Config) { c.SweepInterval = time.Hour })
	a := e.spawn("ws", "a", "bash", "--norc", "--noprofile")
	b := e.spawn("ws", "b", "cat")
	if got := e.windows("ws"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("windows: got %q, want [a b]", got)
	}
	if a.PaneID == b.PaneID || a.PID == 0 || a.Target != "agents_ws:a.0" || !a.Managed {
		t.Fatalf("records: %+v %+v", a, b)
	}
	if err := syscall.Kill(a.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// tmux (3.3a too) reports a signal death as pane_dead_signal: 128+9 (when tmux lost
	// the SIGCHLD, after the registry's reap request: reap.go).
	e.waitFor("a offline with status 137", func() bool {
		rt, ok := e.sawStatus(a.RuntimeID, nudge.StatusOffline)
		return ok && rt.ExitStatus != nil && *rt.ExitStatus == 128+9
	})
	e.waitFor("a restarted", func() bool {
		rt, _ := e.reg.Get(a.RuntimeID)
		return rt.Status == nudge.StatusReady && rt.PID != a.PID && rt.PID != 0 && rt.Restarts == 1
	})
	rt, _ := e.reg.Get(a.RuntimeID)
	// In place: a new pane in the old one's slot (respawn-pane can crash tmux 3.3a).
	if got := e.windows("ws"); rt.Target != a.Target || len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("restart should run in place: target %s->%s, windows %q", a.Target, rt.Target, got)
	}
	if rt.PaneID == a.PaneID {
		t.Errorf("restart kept pane %s", rt.PaneID)
	}
	if out, _ := e.tmux("display", "-p", "-t", rt.PaneID, "#{window_name} #{pane_index} #{remain-on-exit}"); strings.TrimSpace(out) != "a 0 on" {
		t.Errorf("new pane: %q, want its window a, index 0, remain-on-exit on", out)
	}
	e.db.Flush()
	if stored, err := e.db.Runtimes().GetRuntime(a.RuntimeID); err != nil || stored.PID != rt.PID || stored.Status != rt.Status {
		t.Errorf("store: got %+v, %v", stored, err)
	}
	if len(e.audit(a.RuntimeID, "runtime_status_changed")) < 4 {
		t.Errorf("audit: got %d status changes", len(e.audit(a.RuntimeID, "runtime_status_changed")))
	}
	if e.status(b.RuntimeID) != nudge.StatusReady || e.reg.Stats().Restarts != 1 {
		t.Errorf("b: %s, restarts %d", e.status(b.RuntimeID), e.reg.Stats().Restarts)
	}
}

func TestHumanClosesWindowNoticedByEvent(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.SweepInterval = time.Hour })
	e.spawn("ws", "a", "cat")
	b := e.spawn("ws", "b", "cat")
	e.waitFor("control connection", func() bool { _, err := e.reg.Conn("ws"); return err == nil })
	sweeps := e.reg.Stats().Sweeps
	if out, err := e.tmux("kill-window", "-t", b.PaneID); err != nil {
		t.Fatalf("kill-window: %v %s", err, out)
	}
	e.waitFor("b offline", func() bool { _, ok := e.sawStatus(b.RuntimeID, nudge.StatusOffline); return ok })
	recs := e.audit(b.RuntimeID, "runtime_drift")
	if len(recs) != 1 || recs[0].Code != nudge.RegistryDrift {
		t.Fatalf("drift audit: got %+v", recs)
	}
	e.waitFor("b restarted in a new window", func() bool {
		rt, _ := e.reg.Get(b.RuntimeID)
		return rt.Status == nudge.StatusReady && rt.PaneID != b.PaneID && len(e.windows("ws")) == 2
	})
	if e.reg.Stats().Sweeps <= sweeps {
		t.Error("no reconcile ran after the event")
	}
}

func TestCrashLoopEndsFailed(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.RestartDelay = 50 * time.Millisecond })
	rt, err := e.reg.Spawn(context.Background(), SpawnRequest{Workspace: "ws", Role: "crash", Agent: "shell",
		Argv: []string{"sh", "-c", "exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor("failed", func() bool { return e.status(rt.RuntimeID) == nudge.StatusFailed })
	got, _ := e.reg.Get(rt.RuntimeID)
	if got.Restarts != 2 || got.ExitStatus == nil || *got.ExitStatus != 3 || len(got.Failures) != 3 {
		t.Fatalf("got restarts %d exit %v failures %d", got.Restarts, got.ExitStatus, len(got.Failures))
	}
	sweeps := e.reg.Stats().Sweeps
	e.waitFor("more sweeps", func() bool { return e.reg.Stats().Sweeps >= sweeps+3 })
	if got, _ := e.reg.Get(rt.RuntimeID); got.Restarts != 2 || got.Status != nudge.StatusFailed {
		t.Errorf("restarted after crash loop: %+v", got)
	}
	if e.reg.Stats().CrashLoops != 1 {
		t.Errorf("crash loops: %d", e.reg.Stats().CrashLoops)
	}
}

func TestReopenReadopts(t *testing.T) {
	e := newEnv(t, nil)
	a := e.spawn("ws", "a", "cat")
	b := e.spawn("ws", "b", "bash", "--norc")
	e.reg.Close()
	e.open()
	sweeps := e.reg.Stats().Sweeps
	e.waitFor("sweeps after reopen", func() bool { return e.reg.Stats().Sweeps >= sweeps+3 })
	for _, want := range []nudge.Runtime{a, b} {
		got, ok := e.reg.Get(want.RuntimeID)
		if !ok || got.Status != nudge.StatusReady || got.PaneID != want.PaneID || got.PID != want.PID {
			t.Errorf("re-adopt %s: got %+v", want.RuntimeID, got)
		}
	}
	if w := e.windows("ws"); len(w) != 2 {
		t.Errorf("windows after reopen: %q", w)
	}
	if e.reg.Stats().Restarts != 0 {
		t.Errorf("restarts after reopen: %d", e.reg.Stats().Restarts)
	}
}

func TestReopenRestartsMissing(t *testing.T) {
	e := newEnv(t, nil)
	e.spawn("ws", "a", "cat")
	b := e.spawn("ws", "b", "cat")
	e.reg.Close()
	if out, err := e.tmux("kill-window", "-t", b.PaneID); err != nil {
		t.Fatal(err, out)
	}
	e.open()
	e.waitFor("b restarted", func() bool {
		rt, _ := e.reg.Get(b.RuntimeID)
		return rt.Status == nudge.StatusReady && rt.PaneID != b.PaneID
	})
	if len(e.audit(b.RuntimeID, "runtime_drift")) != 1 || len(e.windows("ws")) != 2 {
		t.Errorf("drift audit or windows wrong: %q", e.windows("ws"))
	}
}

func TestStopIgnoringSIGINT(t *testing.T) {
	e := newEnv(t, nil)
	e.spawn("ws", "keep", "cat")
	rt := e.spawn("ws", "stubborn", "sh", "-c", `trap "" INT; echo trapped; sleep 1000`)
	// Stop's C-c must come after the trap is set, or it ends the shell by itself.
	e.waitFor("the trap set", func() bool {
		out, _ := e.tmux("capture-pane", "-p", "-t", rt.PaneID)
		return strings.Contains(out, "trapped")
	})
	if err := e.reg.Stop(context.Background(), rt.RuntimeID, "test"); err != nil {
		t.Fatal(err)
	}
	if got := e.windows("ws"); len(got) != 1 || got[0] != "keep" {
		t.Fatalf("windows after stop: %q", got)
	}
	e.waitFor("process gone", func() bool { return syscall.Kill(rt.PID, 0) != nil })
	recs := e.audit(rt.RuntimeID, "runtime_stopped")
	if len(recs) != 1 || !strings.Contains(string(recs[0].Detail), `"killed":true`) {
		t.Fatalf("stop audit: %+v", recs)
	}
	sweeps := e.reg.Stats().Sweeps
	e.waitFor("sweeps", func() bool { return e.reg.Stats().Sweeps >= sweeps+3 })
	if got, _ := e.reg.Get(rt.RuntimeID); got.Status != nudge.StatusOffline || got.Restarts != 0 {
		t.Errorf("stopped runtime: %+v", got)
	}
	// A stop survives a daemon restart.
	e.reg.Close()
	e.open()
	sweeps = e.reg.Stats().Sweeps
	e.waitFor("sweeps", func() bool { return e.reg.Stats().Sweeps >= sweeps+3 })
	if got, _ := e.reg.Get(rt.RuntimeID); got.Status != nudge.StatusOffline || len(e.windows("ws")) != 1 {
		t.Errorf("stopped runtime after reopen: %+v", got)
	}
}

func TestStopGraceful(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.StopTimeout = time.Minute })
	e.spawn("ws", "keep", "cat")
	rt := e.spawn("ws", "c", "cat")
	if err := e.reg.Stop(context.Background(), rt.RuntimeID, "done"); err != nil {
		t.Fatal(err)
	}
	recs := e.audit(rt.RuntimeID, "runtime_stopped")
	if len(recs) != 1 || !strings.Contains(string(recs[0].Detail), `"killed":false`) {
		t.Fatalf("stop audit: %+v", recs)
	}
	if got := e.windows("ws"); len(got) != 1 {
		t.Errorf("windows: %q", got)
	}
	// Restart brings a stopped runtime back.
	got, err := e.reg.Restart(context.Background(), rt.RuntimeID, "again")
	if err != nil || got.Status != nudge.StatusStarting {
		t.Fatalf("restart: %+v %v", got, err)
	}
	e.waitFor("ready", func() bool { return e.status(rt.RuntimeID) == nudge.StatusReady })
}

func TestRegisterAndDeregister(t *testing.T) {
	e := newEnv(t, nil)
	e.spawn("ws", "a", "cat")
	out, err := e.tmux("new-window", "-d", "-t", "=agents_ws:", "-n", "manual", "-P", "-F", "#{pane_id}", "--", "env", "cat")
	if err != nil {
		t.Fatal(err, out)
	}
	pane := strings.TrimSpace(out)
	rt, err := e.reg.Register(context.Background(), RegisterRequest{Workspace: "ws", Role: "rev", Agent: "shell", Target: "agents_ws:manual.0"})
	if err != nil || rt.PaneID != pane || !rt.Managed {
		t.Fatalf("register: %+v %v", rt, err)
	}
	if opt, _ := e.tmux("show-options", "-p", "-t", pane, "remain-on-exit"); !strings.Contains(opt, "on") {
		t.Errorf("remain-on-exit not set: %q", opt)
	}
	e.waitFor("ready", func() bool { return e.status(rt.RuntimeID) == nudge.StatusReady })
	_, err = e.reg.Register(context.Background(), RegisterRequest{Workspace: "ws", Role: "other", Agent: "shell", Target: pane})
	wantCode(t, err, nudge.Conflict)
	if err := e.reg.Deregister(context.Background(), rt.RuntimeID, "not needed"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.reg.Get(rt.RuntimeID); ok || len(e.windows("ws")) != 2 {
		t.Errorf("after deregister: still tracked or pane gone: %q", e.windows("ws"))
	}
	if len(e.audit(rt.RuntimeID, "runtime_deregistered")) != 1 {
		t.Error("no deregister audit")
	}
	if _, err := e.reg.Register(context.Background(), RegisterRequest{Workspace: "ws", Role: "rev", Agent: "shell", Target: pane, Unmanaged: true}); err != nil {
		t.Errorf("register again after deregister: %v", err)
	}
}

func wantCode(t *testing.T, err error, code nudge.Code) {
	t.Helper()
	var ne *nudge.Error
	if !errors.As(err, &ne) || ne.Code != code {
		t.Errorf("got %v, want %s", err, code)
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	e := newEnv(t, nil)
	e.spawn("ws", "a", "cat")
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(e.root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(e.root, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A prompt file outside the roots (as a key or a token file would be), and one
	// reached through a link that leads out of them.
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("not for the agent"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(e.root, "prompt-link")); err != nil {
		t.Fatal(err)
	}
	spawns := []struct {
		name string
		req  SpawnRequest
		code nudge.Code
	}{
		{"ErrUnknownProfile", SpawnRequest{Workspace: "ws", Role: "x", Agent: "nope"}, nudge.BadRequest},
		{"ErrDirOutside", SpawnRequest{Workspace: "ws", Role: "x", Agent: "shell", Dir: outside}, nudge.Forbidden},
		{"ErrDotDot", SpawnRequest{Workspace: "ws", Role: "x", Agent: "shell", Dir: e.root + "/sub/../../" + filepath.Base(outside)}, nudge.BadRequest},
		{"ErrDotDotInside", SpawnRequest{Workspace: "ws", Role: "x", Agent: "shell", Dir: e.root + "/sub/.."}, nudge.BadRequest},
		{"ErrSymlinkEscape", SpawnRequest{Workspace: "ws", Role: "x", Agent: "shell", Dir: filepath.Join(e.root, "escape")}, nudge.Forbidden},
		{"ErrRelativeDir", SpawnRequest{Workspace: "ws", Role: "x", Agent: "shell", Dir: "sub"}, nudge.BadRequest},
		{"ErrDuplicateRole", SpawnRequest{Workspace: "ws", Role: "a", Agent: "shell", Argv: []string{"cat"}}, nudge.Conflict},
		{"ErrBadWorkspace", SpawnRequest{Workspace: "w.s", Role: "x", Agent: "shell"}, nudge.BadRequest},
		{"ErrBadRole", SpawnRequest{Workspace: "ws", Role: "x y", Agent: "shell"}, nudge.BadRequest},
		{"ErrLauncher", SpawnRequest{Workspace: "ws", Role: "x", Agent: "shell", Argv: []string{"python3"}}, nudge.BadRequest},
		{"ErrPromptFile", SpawnRequest{Workspace: "ws", Role: "x", Agent: "codex", PromptFile: filepath.Join(e.root, "missing")}, nudge.BadRequest},
		{"ErrPromptFileOutside", SpawnRequest{Workspace: "ws", Role: "x", Agent: "codex", PromptFile: secret}, nudge.Forbidden},
		{"ErrPromptFileLinkOut", SpawnRequest{Workspace: "ws", Role: "x", Agent: "codex", PromptFile: filepath.Join(e.root, "prompt-link")}, nudge.Forbidden},
		{"ErrPromptFileRelative", SpawnRequest{Workspace: "ws", Role: "x", Agent: "codex", PromptFile: "prompt"}, nudge.BadRequest},
		{"ErrSessionID", SpawnRequest{Workspace: "ws", Role: "x", Agent: "codex", SessionID: "$(id)"}, nudge.BadRequest},
	}
	for _, tt := range spawns {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.reg.Spawn(context.Background(), tt.req)
			wantCode(t, err, tt.code)
			e.assertUnchanged(t)
		})
	}
	for _, target := range []string{"agents_ws:", "%abc", "agents_ws.0", "agents_ws:a.x"} {
		_, err := e.reg.Register(context.Background(), RegisterRequest{Workspace: "ws", Role: "r", Agent: "shell", Target: target})
		wantCode(t, err, nudge.BadRequest)
		e.assertUnchanged(t)
	}
	for _, target := range []string{"%9999", "agents_ws:nope.0"} {
		_, err := e.reg.Register(context.Background(), RegisterRequest{Workspace: "ws", Role: "r", Agent: "shell", Target: target})
		wantCode(t, err, nudge.TargetNotFound)
		e.assertUnchanged(t)
	}
	_, err := e.reg.Transition(RuntimeID("ws", "a"), nudge.StatusAwaitingAck, "skip")
	wantCode(t, err, nudge.Conflict)
	var te *TransitionError
	if !errors.As(err, &te) || e.status(RuntimeID("ws", "a")) != nudge.StatusReady {
		t.Errorf("illegal transition: %v, status %s", err, e.status(RuntimeID("ws", "a")))
	}
}

func (e *env) assertUnchanged(t *testing.T) {
	t.Helper()
	if w := e.windows("ws"); len(w) != 1 || w[0] != "a" {
		t.Errorf("windows changed: %q", w)
	}
	if rts, _ := e.db.Runtimes().ListRuntimes(); len(rts) != 1 || len(e.reg.List()) != 1 {
		t.Errorf("records changed: %d stored, %d listed", len(rts), len(e.reg.List()))
	}
}

// TestSpawnDirEnvAndPromptFile: a spawn runs in its directory with its environment; its
// first prompt (read from a file, never through a shell) is published (nudge.FirstPrompt) for
// the runtime just recorded, and never put on the agent's command line (issue 32 item
// 10: every local uid reads argv).
func TestSpawnDirEnvAndPromptFile(t *testing.T) {
	var firstMu sync.Mutex
	var firstRT, firstPrompt string
	e := newEnv(t, func(c *Config) {
		c.Env = func(rt nudge.Runtime) []string { return []string{"NUDGE_RUNTIME_ID=" + rt.RuntimeID} }
		nudge.Subscribe(nudge.NewClient(c.Bus, "first", 1), func(ev nudge.FirstPrompt) {
			firstMu.Lock()
			firstRT, firstPrompt = ev.Runtime.RuntimeID, ev.Prompt
			firstMu.Unlock()
		})
	})
	sub := filepath.Join(e.root, "proj")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(e.root, "out")
	prompt := filepath.Join(e.root, "prompt")
	if err := os.WriteFile(prompt, []byte("line one; $(touch pwned)\nline 'two'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	profs := e.cfg.Profiles
	if profs == nil {
		profs, _ = LoadProfiles("")
	}
	p := profs["shell"]
	p.PromptArg = "append"
	e.reg.recs.cfg.Profiles = map[string]Profile{"shell": p}
	script := `printf '%s|%s|%s|%s' "$PWD" "$NUDGE_RUNTIME_ID" "$#" "$*" > ` + shellQuote(out) + `; exec cat`
	rt, err := e.reg.Spawn(context.Background(), SpawnRequest{Workspace: "ws", Role: "p", Agent: "shell", Dir: sub,
		PromptFile: prompt, Argv: []string{"sh", "-c", script, "sh"}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor("output file", func() bool { b, _ := os.ReadFile(out); return len(b) > 0 })
	b, _ := os.ReadFile(out)
	want := sub + "|" + rt.RuntimeID + "|0|"
	if string(b) != want {
		t.Errorf("got %q, want %q (no prompt on the command line)", b, want)
	}
	e.waitFor("first prompt", func() bool { firstMu.Lock(); defer firstMu.Unlock(); return firstRT != "" })
	firstMu.Lock()
	if firstRT != rt.RuntimeID || firstPrompt != "line one; $(touch pwned)\nline 'two'" {
		t.Errorf("FirstPrompt got %q for %q", firstPrompt, firstRT)
	}
	firstMu.Unlock()
	if _, err := os.Stat(filepath.Join(sub, "pwned")); err == nil {
		t.Error("prompt was run by a shell")
	}
	if len(rt.Argv) != 4 || rt.Dir != sub || strings.Contains(strings.Join(rt.Argv, " "), "line one") {
		t.Errorf("record argv/dir: %q %q", rt.Argv, rt.Dir)
	}
}

// TestPaneExit reads a live pane, a dead one (exit status 3) and a missing one, which
// tmux's display-message answers with empty formats rather than an error.
func TestPaneExit(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.SweepInterval = time.Hour; c.RestartDelay = time.Hour })
	a := e.spawn("ws", "a", "cat")
	ctx := context.Background()
	if alive, st, err := e.reg.PaneExit(ctx, "ws", a.PaneID); !alive || st != nil || err != nil {
		t.Errorf("live pane: alive=%v status=%v err=%v", alive, st, err)
	}
	pane, err := e.reg.LaunchWindow(ctx, "ws", "once", []string{"sh", "-c", "exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor("the pane to die", func() bool {
		alive, st, err := e.reg.PaneExit(ctx, "ws", pane)
		if err != nil {
			t.Fatalf("dead pane: %v", err)
		}
		if !alive && (st == nil || *st != 3) {
			t.Fatalf("dead pane: exit status %v, want 3", st)
		}
		return !alive
	})
	if alive, st, err := e.reg.PaneExit(ctx, "ws", "%999"); alive || st != nil || err != nil {
		t.Errorf("missing pane: alive=%v status=%v err=%v, want not alive, unknown status", alive, st, err)
	}
}

// TestUnsetEnv: a profile's unset_env removes variables from the agent's environment
// whatever the tmux server holds (Gemini CLI runs headless when CI is "true", as it is
// when nudge runs in a CI job); the gemini profile removes CI and GITHUB_ACTIONS.
func TestUnsetEnv(t *testing.T) {
	t.Setenv("CI", "true") // the tmux server, started by the registry, has it
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("KEPT_VAR", "kept")
	e := newEnv(t, func(c *Config) { c.SweepInterval = time.Hour })
	profs, err := LoadProfiles("")
	if err != nil {
		t.Fatal(err)
	}
	if g := profs["gemini"].UnsetEnv; !slices.Equal(g, []string{"CI", "GITHUB_ACTIONS"}) {
		t.Errorf("gemini profile unset_env %q", g)
	}
	p := profs["shell"]
	p.UnsetEnv = profs["gemini"].UnsetEnv
	e.reg.recs.cfg.Profiles = map[string]Profile{"shell": p}
	out := filepath.Join(e.root, "out")
	script := `printf '%s|%s|%s' "${CI-unset}" "${GITHUB_ACTIONS-unset}" "$KEPT_VAR" > ` + shellQuote(out) + `; exec cat`
	if _, err := e.reg.Spawn(context.Background(), SpawnRequest{Workspace: "ws", Role: "u", Agent: "shell", Argv: []string{"sh", "-c", script}}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("output file", func() bool { b, _ := os.ReadFile(out); return len(b) > 0 })
	if b, _ := os.ReadFile(out); string(b) != "unset|unset|kept" {
		t.Errorf("agent environment CI|GITHUB_ACTIONS|KEPT_VAR: got %q, want unset|unset|kept", b)
	}
}

// TestSpawnsTogetherNeverDrift: spawns that end while another spawn's reconcile has listed
// the panes but not yet judged the records are not judged by that list (their pane is
// not in it): no runtime reads missing, none is restarted.
func TestSpawnsTogetherNeverDrift(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.spawn("ws", "first", "sh", "-c", "sleep 600")
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.reg.Spawn(context.Background(), SpawnRequest{Workspace: "ws", Role: fmt.Sprintf("r%d", i), Agent: "shell",
				Argv: []string{"sh", "-c", "sleep 600"}}); err != nil {
				t.Errorf("spawn r%d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	e.waitFor("every runtime ready", func() bool {
		for _, rt := range e.reg.List() {
			if rt.Status != nudge.StatusReady {
				return false
			}
		}
		return true
	})
	time.Sleep(3 * e.cfg.SweepInterval)
	if s := e.reg.Stats(); s.Drifts != 0 || s.Restarts != 0 || s.PaneDeaths != 0 {
		t.Fatalf("spawned together: %d read missing, %d restarted, %d dead", s.Drifts, s.Restarts, s.PaneDeaths)
	}
}
