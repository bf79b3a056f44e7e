package cli

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/controlmode"
)

// Seed 004: the user runs their project supervisor in a session of their own on their
// default tmux server (`tmux new -s consilio-ps`); nudge adopts that pane and types its
// triggers there. A private server stands for the user's default one; the test kills it.

// userTmux is a private tmux server standing for the user's own.
type userTmux struct {
	t    *testing.T
	name string
}

func newUserTmux(t *testing.T) *userTmux {
	u := &userTmux{t: t, name: fmt.Sprintf("user-t-%d-%d", os.Getpid(), testSeq.Add(1))}
	t.Cleanup(func() { exec.Command("tmux", "-L", u.name, "kill-server").Run() })
	return u
}

func (u *userTmux) tmux(args ...string) string {
	u.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", u.name, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		u.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// needDeadPaneSafe skips a test of a managed runtime on the user's server where tmux
// refuses it (before 3.3: TestUserSessionOldTmuxManagedRefused).
func (u *userTmux) needDeadPaneSafe() {
	u.t.Helper()
	if caps := controlmode.ParseVersion(u.tmux("display-message", "-p", "#{version}")); !caps.DeadPaneSafe() {
		u.t.Skipf("tmux %s: a managed runtime is not registered on a user's server", caps)
	}
}

func (u *userTmux) sessions() string {
	out, _ := exec.Command("tmux", "-L", u.name, "list-sessions", "-F", "#{session_name}").Output()
	return strings.Join(strings.Fields(string(out)), " ")
}

// attach is a human at a real client of the user's server, through a pseudo-terminal.
func (u *userTmux) attach(target string) *operator {
	u.t.Helper()
	cmd := exec.Command("tmux", "-L", u.name, "attach-session", "-t", target)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		u.t.Fatal(err)
	}
	go io.Copy(io.Discard, ptmx) //nolint:errcheck // drains the client's screen until close
	op := &operator{t: u.t, ptmx: ptmx, cmd: cmd}
	u.t.Cleanup(op.close)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(u.tmux("list-clients", "-F", "#{client_control_mode}"), "0") {
		if time.Now().After(deadline) {
			u.t.Fatal("operator client never attached")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return op
}

func (td *testDaemon) register(body api.RegisterRequest) (runtimeView, error) {
	var rt runtimeView
	err := td.c.do(t0(), "POST", "/v1/runtimes/register", body, &rt)
	return rt, err
}

// TestUserSessionTriggers: a pane of proj-ps on the user's server is registered; triggers
// are delivered and acked there, also after a daemon restart; a register elsewhere into
// the bound workspace and a spawn there are refused; stop and deregister leave the user's
// session alone.
func TestUserSessionTriggers(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.Panes.StopTimeout = 300 * time.Millisecond
	td := startDaemon(t, cfg)
	u := newUserTmux(t)
	file := filepath.Join(cfg.Panes.Roots[0], "ps.bytes")
	u.tmux("new-session", "-d", "-s", "proj-ps", "-x", "120", "-y", "40", "sh", "-c", "stty raw; exec cat > "+file)
	readUntil(t, file, func(string) bool { _, err := os.Stat(file); return err == nil })
	u.tmux("new-session", "-d", "-s", "other-ps", "cat")
	u.needDeadPaneSafe()

	rt, err := td.register(api.RegisterRequest{Workspace: "proj", Role: "ps", Agent: "shell", Target: "proj-ps:0.0", TmuxSocket: u.name})
	if err != nil {
		t.Fatal(err)
	}
	if rt.TmuxSocket != u.name || rt.TmuxSession != "proj-ps" || rt.Target != "proj-ps:0.0" {
		t.Fatalf("registered: %+v", rt.Runtime)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	var want strings.Builder
	deliver := func(td *testDaemon, id string) {
		t.Helper()
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "proj", "agent": "ps", "prompt": "report status " + id}); err != nil {
			t.Fatal(err)
		}
		got := td.waitTrigger(id, closed)
		if got.State != "acked" || got.Result != "delivered" {
			t.Fatalf("%s: receipt %+v", id, got)
		}
		want.WriteString(expectTyped(id, "", "", "report status "+id))
		if got := readUntil(t, file, func(s string) bool { return len(s) >= want.Len() }); got != want.String() {
			t.Fatalf("%s: pane read\n%q\nwant\n%q", id, got, want.String())
		}
	}
	deliver(td, "u1")

	// The workspace is bound to proj-ps on the user's server.
	_, err = td.register(api.RegisterRequest{Workspace: "proj", Role: "b", Agent: "shell", Target: "other-ps", TmuxSocket: u.name})
	wantAPIError(t, "a register elsewhere", err, "CONFLICT", "bound to session proj-ps on tmux server")
	_, err = td.register(api.RegisterRequest{Workspace: "proj", Role: "b", Agent: "shell", Target: "agents_x:y.0", TmuxSocket: cfg.Panes.SocketName})
	wantAPIError(t, "a register on nudge's server", err, "TARGET_NOT_FOUND", "agents_x:y.0")
	var sp runtimeView
	err = td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: "proj", Role: "c", Agent: "shell", Dir: cfg.Panes.Roots[0], Argv: []string{"cat"}}, &sp)
	wantAPIError(t, "a spawn into the user's session", err, "CONFLICT", "does not own")

	// A daemon restart keeps the binding.
	td.stop()
	td2 := startDaemon(t, cfg)
	got := td2.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	if got.TmuxSocket != u.name || got.PaneID != rt.PaneID {
		t.Fatalf("after the restart: %+v", got.Runtime)
	}
	deliver(td2, "u2")

	// The CLI names the server too; an unmanaged pane stopped there keeps running.
	side := u.tmux("split-window", "-d", "-t", "=proj-ps:0", "-P", "-F", "#{pane_id}", "cat")
	out, errOut, code := td2.runCLI("register", "--workspace", "proj", "--role", "side", "--agent", "shell", "--unmanaged",
		"--target", side, "--tmux-server", u.name)
	if code != 0 || !strings.Contains(out, "rt_proj.side") {
		t.Fatalf("nudge register: exit %d\n%s%s", code, out, errOut)
	}
	pid := u.tmux("display-message", "-p", "-t", side, "#{pane_pid}")
	for _, id := range []string{"rt_proj.side", rt.RuntimeID} {
		if err := td2.c.do(t0(), "POST", "/v1/runtimes/"+id+"/stop", nil, nil); err != nil {
			t.Fatalf("stop %s: %v", id, err)
		}
	}
	if got := u.tmux("display-message", "-p", "-t", side, "#{pane_pid} #{pane_dead}"); got != pid+" 0" {
		t.Errorf("the unmanaged pane after stop: %q, want %q", got, pid+" 0")
	}
	for _, id := range []string{"rt_proj.side", rt.RuntimeID} {
		if err := td2.c.do(t0(), "DELETE", "/v1/runtimes/"+id, nil, nil); err != nil {
			t.Fatalf("deregister %s: %v", id, err)
		}
	}
	if got := u.sessions(); got != "other-ps proj-ps" {
		t.Errorf("the user's sessions: %q", got)
	}
	if out, _ := exec.Command("tmux", "-L", cfg.Panes.SocketName, "list-sessions", "-F", "#{session_name}").Output(); strings.Contains(string(out), "ps") {
		t.Errorf("sessions on nudge's server: %q", out)
	}
}

// TestUserSessionHumanTyping: a human typing at a client of the user's own server makes
// the pane operator_busy (nudge's key binding is installed there, and removed when the
// daemon stops); the trigger waits and is delivered once the human is quiet.
func TestUserSessionHumanTyping(t *testing.T) {
	cfg := collisionConfig(t)
	td := startDaemon(t, cfg)
	own := td.spawnBash("own") // %0 on nudge's server; the user's pane is %0 on theirs
	u := newUserTmux(t)
	u.tmux("new-session", "-d", "-s", "proj-ps", "-x", "120", "-y", "40", "bash", "--norc", "--noprofile")
	u.tmux("send-keys", "-t", "=proj-ps:", "-l", "PS1='$ '")
	u.tmux("send-keys", "-t", "=proj-ps:", "Enter")
	u.needDeadPaneSafe()
	rt, err := td.register(api.RegisterRequest{Workspace: "proj", Role: "ps", Agent: "shell", Target: "proj-ps", TmuxSocket: u.name})
	if err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Readiness == "READY" && !r.OperatorBusy })
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(u.tmux("list-keys", "-T", "root"), "nudge-human") {
		if time.Now().After(deadline) {
			t.Fatal("the key binding was never installed on the user's server")
		}
		time.Sleep(50 * time.Millisecond)
	}
	op := u.attach(rt.PaneID)
	op.typeKeys("echo human-was-here")
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.OperatorBusy })
	if rt.PaneID != own.PaneID {
		t.Logf("pane ids differ (%s, %s): the test of two servers' equal ids is moot", rt.PaneID, own.PaneID)
	}
	if got := td.waitRuntime(own.RuntimeID, func(runtimeView) bool { return true }); got.OperatorBusy {
		t.Errorf("a key on the user's server made nudge's own %s busy", own.PaneID)
	}
	tr, err := td.trigger(map[string]any{"trigger_id": "h1", "workspace": "proj", "agent": "ps", "prompt": "automation text"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.State != "deferred" || tr.ErrorCode != "OPERATOR_BUSY" {
		t.Fatalf("first answer: %+v", tr)
	}
	op.typeKeys("\r")
	if got := td.waitTrigger("h1", closed); got.State != "acked" {
		t.Fatalf("after the human went quiet: %+v", got)
	}
	if screen := u.tmux("capture-pane", "-p", "-t", rt.PaneID); !strings.Contains(screen, "[BRIDGE_TRIGGER id=h1") {
		t.Fatalf("prompt not delivered:\n%s", screen)
	}
	td.stop()
	if keys := u.tmux("list-keys", "-T", "root"); strings.Contains(keys, "nudge-human") {
		t.Errorf("the key binding outlived the daemon on the user's server:\n%s", keys)
	}
	if got := u.sessions(); got != "proj-ps" {
		t.Errorf("the user's sessions: %q", got)
	}
}

// TestUserServerGoneNotStarted: the user's whole server ends; neither the workspace's
// redials nor the key watch's, nor the binding's removal when the daemon stops, start it
// again (attach-session and list-keys would, running the user's configuration: here one
// that makes a session).
func TestUserServerGoneNotStarted(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".tmux.conf"), []byte("new-session -d -s fromconf\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	td := startDaemon(t, newTestConfig(t))
	u := newUserTmux(t)
	u.tmux("new-session", "-d", "-s", "proj-ps", "cat")
	rt, err := td.register(api.RegisterRequest{Workspace: "proj", Role: "ps", Agent: "shell", Target: "proj-ps", TmuxSocket: u.name, Unmanaged: true})
	if err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(u.tmux("list-keys", "-T", "root"), "nudge-human") {
		if time.Now().After(deadline) {
			t.Fatal("the key binding was never installed on the user's server")
		}
		time.Sleep(50 * time.Millisecond)
	}
	u.tmux("kill-server")
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "offline" })
	time.Sleep(2 * time.Second) // several redials of both connections (100 ms, doubling)
	if got := u.sessions(); got != "" {
		t.Fatalf("the user's server was started again: sessions %q", got)
	}
	td.stop()
	if got := u.sessions(); got != "" {
		t.Fatalf("the user's server was started by the daemon's stop: sessions %q", got)
	}
}

// TestUserSessionOldTmuxManagedRefused: on a tmux that can crash when a remain-on-exit
// pane's program ends (before 3.3), a managed register on the user's own server is refused
// with how to go on, and nothing is set on their pane; --unmanaged is registered, without
// remain-on-exit. On newer tmux the managed register sets remain-on-exit.
func TestUserSessionOldTmuxManagedRefused(t *testing.T) {
	cfg := newTestConfig(t)
	td := startDaemon(t, cfg)
	u := newUserTmux(t)
	file := filepath.Join(cfg.Panes.Roots[0], "ps.bytes")
	u.tmux("new-session", "-d", "-s", "proj-ps", "-x", "120", "-y", "40", "sh", "-c", "stty raw; exec cat > "+file)
	readUntil(t, file, func(string) bool { _, err := os.Stat(file); return err == nil })
	caps := controlmode.ParseVersion(u.tmux("display-message", "-p", "#{version}"))

	rt, err := td.register(api.RegisterRequest{Workspace: "proj", Role: "ps", Agent: "shell", Target: "proj-ps", TmuxSocket: u.name})
	if caps.DeadPaneSafe() {
		if err != nil {
			t.Fatalf("tmux %s: %v", caps, err)
		}
		if got := u.tmux("show-options", "-p", "-v", "-t", rt.PaneID, "remain-on-exit"); got != "on" {
			t.Errorf("tmux %s: remain-on-exit of the managed pane: %q", caps, got)
		}
		return
	}
	wantAPIError(t, "a managed register on tmux "+caps.Version, err, "BAD_REQUEST", "--unmanaged")
	if got := u.tmux("show-options", "-p", "-v", "-t", "proj-ps", "remain-on-exit"); got == "on" {
		t.Errorf("remain-on-exit was set on the user's pane")
	}
	rt, err = td.register(api.RegisterRequest{Workspace: "proj", Role: "ps", Agent: "shell", Target: "proj-ps", TmuxSocket: u.name, Unmanaged: true})
	if err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	if got := u.tmux("show-options", "-p", "-v", "-t", rt.PaneID, "remain-on-exit"); got == "on" {
		t.Errorf("remain-on-exit was set on the unmanaged pane")
	}
}
