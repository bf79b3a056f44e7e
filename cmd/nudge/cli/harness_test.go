package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
	eventstream "github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/detector"
)

var testSeq atomic.Int64

// testDaemon is an in-process `nudge serve` on a private tmux server.
type testDaemon struct {
	t      *testing.T
	cfg    daemon.Config
	d      *daemon.Daemon
	c      *client
	cancel context.CancelFunc
	done   chan error
	out    *bytes.Buffer
}

// privateTempDir is t.TempDir with mode 0700, as the daemon makes a state dir it creates
// (t.TempDir's is 0755 under the usual umask, which nudge doctor rightly fails).
func privateTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// newTestConfig returns a serve config on a private tmux server and temp dirs.
func newTestConfig(t *testing.T) daemon.Config {
	t.Helper()
	cfg := daemon.DefaultConfig()
	cfg.StateDir = privateTempDir(t)
	sockDir, err := os.MkdirTemp("", "nt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	cfg.Socket = filepath.Join(sockDir, "n.sock")
	cfg.Panes.SocketName = fmt.Sprintf("nudge-t-%d-%d", os.Getpid(), testSeq.Add(1))
	cfg.Panes.ConfigFile = "/dev/null"
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Panes.Roots = []string{root}
	cfg.LogLevel = "debug"
	cfg.ProfileDir, cfg.PackDir = "", "" // never the user's own overrides
	server := cfg.Panes.SocketName
	t.Cleanup(func() { exec.Command("tmux", "-L", server, "kill-server").Run() })
	return cfg
}

// startDaemon opens and runs a daemon with cfg until the test ends (or stop).
func startDaemon(t *testing.T, cfg daemon.Config) *testDaemon {
	t.Helper()
	out := &bytes.Buffer{}
	var logw io.Writer = io.Discard
	if os.Getenv("NUDGE_TEST_LOG") != "" {
		logw = os.Stderr
	}
	env := &cliEnv{stdin: strings.NewReader(""), stdout: io.Discard, stderr: logw, getenv: os.Getenv}
	ctx, cancel := context.WithCancel(context.Background())
	d, err := daemon.Open(ctx, cfg, env.stderr)
	if err != nil {
		cancel()
		t.Fatalf("open daemon: %v", err)
	}
	td := &testDaemon{t: t, cfg: cfg, d: d, c: newClient(cfg.Socket, ""), cancel: cancel, done: make(chan error, 1), out: out}
	go func() { td.done <- d.Run(ctx) }()
	t.Cleanup(td.stop)
	return td
}

func (td *testDaemon) stop() {
	if td.cancel == nil {
		return
	}
	td.cancel()
	<-td.done
	td.d.Close()
	td.cancel = nil
}

// spawnShell starts a managed shell-profile runtime running argv.
func (td *testDaemon) spawnShell(ws, role string, argv ...string) runtimeView {
	td.t.Helper()
	var rt runtimeView
	body := spawnBody{Workspace: ws, Role: role, Agent: "shell", Dir: td.cfg.Panes.Roots[0], Argv: argv}
	if err := td.c.do(context.Background(), "POST", "/v1/runtimes", body, &rt); err != nil {
		td.t.Fatalf("spawn: %v", err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	return rt
}

// waitRuntime polls a runtime until ok or a generous deadline. Each answer is decoded
// into a fresh value: JSON leaves a field whose key is absent (omitempty: a cleared
// exit_status, cooldown_until, ...) as it was, so a reused one would carry an earlier
// answer's value into a later one.
func (td *testDaemon) waitRuntime(id string, ok func(runtimeView) bool) runtimeView {
	td.t.Helper()
	var rt runtimeView
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var got runtimeView
		if err := td.c.do(context.Background(), "GET", "/v1/runtimes/"+id, nil, &got); err == nil {
			if rt = got; ok(rt) {
				return rt
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	screen := "(no pane)"
	if rt.PaneID != "" {
		out, _ := exec.Command("tmux", "-L", td.cfg.Panes.SocketName, "capture-pane", "-p", "-t", rt.PaneID).CombinedOutput()
		screen = string(out)
	}
	td.t.Fatalf("runtime %s never reached the wanted state; last %+v\nits pane:\n%s", id, rt.Runtime, screen)
	return rt
}

// trigger posts a trigger request.
func (td *testDaemon) trigger(req map[string]any) (nudge.Trigger, error) {
	var t nudge.Trigger
	err := td.c.do(context.Background(), "POST", "/v1/triggers", req, &t)
	return t, err
}

// waitTrigger polls a trigger until ok or a generous deadline (a fresh value per answer,
// as in waitRuntime).
func (td *testDaemon) waitTrigger(id string, ok func(nudge.Trigger) bool) nudge.Trigger {
	td.t.Helper()
	var tr nudge.Trigger
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var got nudge.Trigger
		if err := td.c.do(context.Background(), "GET", "/v1/triggers/"+id, nil, &got); err == nil {
			if tr = got; ok(tr) {
				return tr
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	td.t.Fatalf("trigger %s never reached the wanted state; last %+v", id, tr)
	return tr
}

// tmux runs a tmux command on the daemon's private server.
func (td *testDaemon) tmux(args ...string) string {
	td.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", td.cfg.Panes.SocketName}, args...)...).CombinedOutput()
	if err != nil {
		td.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

func closed(t nudge.Trigger) bool { return t.Closed }

func t0() context.Context { return context.Background() }

// composerEmpties fails unless the pane's composer, read by the pack's rules, holds no
// envelope within 15 s. An agent's record can show a prompt (submitted, acked) a moment
// before its screen has redrawn the composer empty; what may not happen is a prompt that
// stays typed there.
func (td *testDaemon) composerEmpties(pane, pack string) {
	td.t.Helper()
	packs, err := detector.LoadPacks("")
	if err != nil {
		td.t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		screen := td.tmux("capture-pane", "-p", "-e", "-t", pane)
		c := detector.Classify(packs[pack], screen)
		if !strings.Contains(c.Draft, "BRIDGE_TRIGGER") {
			return
		}
		if time.Now().After(deadline) {
			td.t.Fatalf("the composer still holds a prompt: %q\n%s", c.Draft, screen)
		}
	}
}

// Event is one event of /v1/events (package events).
type Event = eventstream.Event
