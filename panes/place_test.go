package panes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// userServer is a private tmux server standing for a user's own (default) server, with
// sessions the user made; the test kills it at its end.
type userServer struct {
	t    *testing.T
	name string
}

func newUserServer(t *testing.T) *userServer {
	u := &userServer{t: t, name: fmt.Sprintf("user-t-%d-%d", os.Getpid(), serverSeq.Add(1))}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", u.name, "kill-server").Run() })
	return u
}

func (u *userServer) tmux(args ...string) string {
	u.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", u.name, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		u.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// needDeadPaneSafe skips a test of a managed runtime on the user's server where nudge
// refuses it (tmux before 3.3: launcher.deadPaneSafe).
func (u *userServer) needDeadPaneSafe() {
	u.t.Helper()
	if caps := controlmode.ParseVersion(u.tmux("display-message", "-p", "#{version}")); !caps.DeadPaneSafe() {
		u.t.Skipf("tmux %s: a managed runtime is not registered on a user's server", caps)
	}
}

func (u *userServer) sessions() string {
	out, _ := exec.Command("tmux", "-L", u.name, "list-sessions", "-F", "#{session_name}").Output()
	return strings.Join(strings.Fields(string(out)), " ")
}

func TestNormSocket(t *testing.T) {
	own := &Config{SocketName: "nudge"}
	for in, want := range map[string]string{"": "", "nudge": "", "default": "default", "mine": "mine",
		"/tmp/x/../s": "/tmp/s"} {
		if got, err := normSocket(own, in); err != nil || got != want {
			t.Errorf("%q: got %q, %v, want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"a/b", "-L", "..", "a b", "x\n", "/tmp/\x01"} {
		if _, err := normSocket(own, in); err == nil {
			t.Errorf("%q: accepted", in)
		}
	}
	byPath := &Config{SocketPath: "/run/nudge.sock"}
	if got, _ := normSocket(byPath, "/run/nudge.sock"); got != "" {
		t.Errorf("own socket path kept as %q", got)
	}
	if got, _ := normSocket(byPath, "nudge"); got != "nudge" {
		t.Errorf("a name beside an own path: %q", got)
	}
	if a := socketArgs(own, ""); strings.Join(a, " ") != "-L nudge" {
		t.Errorf("own: %q", a)
	}
	if a := socketArgs(own, "/s"); strings.Join(a, " ") != "-S /s" {
		t.Errorf("path: %q", a)
	}
	if a := socketArgs(byPath, "default"); strings.Join(a, " ") != "-L default" {
		t.Errorf("name: %q", a)
	}
}

// TestRegisterUserSession: a pane of the user's own session on the user's own server
// (seed 004: `tmux new -s proj-ps`) is adopted and watched there; the workspace stays
// bound to it across a reopen; nothing is created in, and nothing kills, the user's
// session or server.
func TestRegisterUserSession(t *testing.T) {
	e := newEnv(t, nil)
	own := e.spawn("ws", "a", "cat") // %0 on nudge's server: the user's %0 is another pane
	u := newUserServer(t)
	u.tmux("new-session", "-d", "-s", "proj-ps", "-n", "ps", "cat")
	u.tmux("new-session", "-d", "-s", "other-ps", "cat")
	u.needDeadPaneSafe()
	ctx := context.Background()

	rt, err := e.reg.Register(ctx, RegisterRequest{Workspace: "proj", Role: "ps", Agent: "shell", Target: "proj-ps:0.0", TmuxSocket: u.name})
	if err != nil {
		t.Fatal(err)
	}
	if rt.TmuxSocket != u.name || rt.TmuxSession != "proj-ps" || rt.Target != "proj-ps:0.0" || rt.PaneID != own.PaneID || !rt.Managed {
		t.Fatalf("registered %+v", rt)
	}
	e.waitFor("ps ready", func() bool { return e.status(rt.RuntimeID) == nudge.StatusReady })
	if got, other := e.reg.SessionOf("proj"), e.reg.SessionOf("other"); got != "proj-ps" || other != SessionName("other") {
		t.Errorf("SessionOf: proj %q, other %q", got, other)
	}
	e.waitFor("the workspace's connection", func() bool { _, err := e.reg.Conn("proj"); return err == nil })
	c, err := e.reg.Conn("proj")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Do(ctx, "display-message -p '#{session_name} #{socket_path}'")
	if err != nil || len(rep.Lines) != 1 || !strings.HasPrefix(rep.Lines[0], "proj-ps ") || !strings.HasSuffix(rep.Lines[0], "/"+u.name) {
		t.Fatalf("the workspace's connection: %+v %v", rep, err)
	}

	// The workspace is bound to proj-ps: another session, or a spawn, is refused.
	_, err = e.reg.Register(ctx, RegisterRequest{Workspace: "proj", Role: "b", Agent: "shell", Target: "other-ps", TmuxSocket: u.name})
	wantCode(t, err, nudge.Conflict)
	if err == nil || !strings.Contains(err.Error(), "bound to session proj-ps on tmux server") || !strings.Contains(err.Error(), "--workspace") {
		t.Errorf("refusal: %v", err)
	}
	_, err = e.reg.Spawn(ctx, SpawnRequest{Workspace: "proj", Role: "c", Agent: "shell", Argv: []string{"cat"}})
	wantCode(t, err, nudge.Conflict)
	if err == nil || !strings.Contains(err.Error(), "does not own") {
		t.Errorf("spawn refusal: %v", err)
	}
	// Another workspace's session on nudge's server is not for adopting.
	_, err = e.reg.Register(ctx, RegisterRequest{Workspace: "proj2", Role: "x", Agent: "shell", Target: "agents_ws:a.0"})
	wantCode(t, err, nudge.BadRequest)
	// A second runtime in the same place (the session alone names its active pane).
	side := u.tmux("split-window", "-d", "-t", "=proj-ps:0", "-P", "-F", "#{pane_id}", "cat")
	un, err := e.reg.Register(ctx, RegisterRequest{Workspace: "proj", Role: "u", Agent: "shell", Target: side, Unmanaged: true})
	if err != nil || un.TmuxSocket != u.name || un.TmuxSession != "proj-ps" {
		t.Fatalf("second runtime in the bound place: %+v %v", un, err)
	}

	// A reopen keeps the binding and re-adopts the panes there.
	e.reg.Close()
	e.open()
	sweeps := e.reg.Stats().Sweeps
	e.waitFor("sweeps after reopen", func() bool { return e.reg.Stats().Sweeps >= sweeps+3 })
	for _, want := range []nudge.Runtime{rt, un, own} {
		got, _ := e.reg.Get(want.RuntimeID)
		if got.Status != nudge.StatusReady || got.PaneID != want.PaneID || got.PID != want.PID || got.TmuxSocket != want.TmuxSocket {
			t.Errorf("after reopen %s: %+v", want.RuntimeID, got)
		}
	}

	// Stop: the unmanaged pane is left running; the managed one's program is ended but
	// its pane (the user's) is not killed, and the session stays.
	pid := u.tmux("display-message", "-p", "-t", side, "#{pane_pid}")
	if err := e.reg.Stop(ctx, un.RuntimeID, "test"); err != nil {
		t.Fatal(err)
	}
	if got := u.tmux("display-message", "-p", "-t", side, "#{pane_pid} #{pane_dead}"); got != pid+" 0" {
		t.Errorf("the unmanaged pane after stop: %q, want %q", got, pid+" 0")
	}
	if err := e.reg.Stop(ctx, rt.RuntimeID, "test"); err != nil {
		t.Fatal(err)
	}
	if got := u.tmux("display-message", "-p", "-t", rt.PaneID, "#{pane_id} #{pane_dead}"); got != rt.PaneID+" 1" {
		t.Errorf("the managed pane after stop: %q", got)
	}
	for _, id := range []string{rt.RuntimeID, un.RuntimeID} {
		if err := e.reg.Deregister(ctx, id, "test"); err != nil {
			t.Fatal(err)
		}
	}
	if got := u.sessions(); got != "other-ps proj-ps" {
		t.Errorf("the user's sessions: %q", got)
	}
	// With no runtime left the workspace may be bound again: nudge's own session.
	if rt := e.spawn("proj", "c", "cat"); rt.TmuxSocket != "" || rt.TmuxSession != "agents_proj" {
		t.Errorf("spawn after the rebinding: %+v", rt)
	}
	if got := u.sessions(); got != "other-ps proj-ps" {
		t.Errorf("the user's sessions after a spawn: %q", got)
	}
}

// TestUserSessionGone: a user's session that ends takes its runtimes offline (managed:
// failed, as nothing may be started there); nudge never creates it again.
func TestUserSessionGone(t *testing.T) {
	e := newEnv(t, nil)
	u := newUserServer(t)
	u.tmux("new-session", "-d", "-s", "keep", "cat") // the server outlives the session
	u.tmux("new-session", "-d", "-s", "gone-ps", "cat")
	u.needDeadPaneSafe()
	ctx := context.Background()
	m, err := e.reg.Register(ctx, RegisterRequest{Workspace: "gone", Role: "m", Agent: "shell", Target: "gone-ps", TmuxSocket: u.name})
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor("ready", func() bool { return e.status(m.RuntimeID) == nudge.StatusReady })
	u.tmux("kill-session", "-t", "=gone-ps") // the user ends their session
	e.waitFor("failed", func() bool { return e.status(m.RuntimeID) == nudge.StatusFailed })
	if a := e.audit(m.RuntimeID, "runtime_status_changed"); len(a) == 0 || !strings.Contains(a[len(a)-1].Reason, "where nudge opens no window") {
		t.Errorf("the failure says: %+v", a)
	}
	if got := u.sessions(); got != "keep" {
		t.Errorf("the user's sessions: %q", got)
	}
	if out, _ := e.tmux("list-sessions", "-F", "#{session_name}"); strings.Contains(out, "gone") {
		t.Errorf("nudge's server: %q", out)
	}
}

// TestUserServerGoneNotStarted: the user's whole server ends; nudge's redials and sweeps
// never start it again (attach-session would, running the user's configuration, here one
// that makes a session).
func TestUserServerGoneNotStarted(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(home+"/.tmux.conf", []byte("new-session -d -s fromconf\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home+"/.config")
	e := newEnv(t, nil)
	u := newUserServer(t)
	u.tmux("new-session", "-d", "-s", "ps", "cat")
	rt, err := e.reg.Register(context.Background(), RegisterRequest{Workspace: "gone", Role: "u", Agent: "shell", Target: "ps", TmuxSocket: u.name, Unmanaged: true})
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor("ready", func() bool { return e.status(rt.RuntimeID) == nudge.StatusReady })
	u.tmux("kill-server")
	e.waitFor("offline", func() bool { return e.status(rt.RuntimeID) == nudge.StatusOffline })
	e.waitFor("the connection gone", func() bool { _, err := e.reg.Conn("gone"); return err != nil })
	if _, err := e.reg.Conn("gone"); err == nil || !strings.Contains(err.Error(), "session ps on tmux server") || !strings.Contains(err.Error(), "tmux -L "+u.name+" ls") {
		t.Errorf("without its session: %v", err)
	}
	sweeps := e.reg.Stats().Sweeps
	e.waitFor("sweeps and redials", func() bool { return e.reg.Stats().Sweeps >= sweeps+5 })
	if got := u.sessions(); got != "" {
		t.Fatalf("the user's server was started again: sessions %q", got)
	}
}

// TestForeignSocket: a local server's socket must be a socket of this uid; a missing one
// is left to tmux (no server there). Symlinks are followed, as tmux follows them.
func TestForeignSocket(t *testing.T) {
	dir := t.TempDir()
	cfg := &Config{}
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(sock, link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		code nudge.Code // "" passes
	}{
		{sock, ""},
		{link, ""},
		{filepath.Join(dir, "none"), ""},
		{file, nudge.BadRequest},
	}
	for i, tc := range cases {
		err := foreignSocket(cfg, tc.path)
		if got := codeOf(err); got != tc.code {
			t.Errorf("#%d %s: got %v, want %q", i, tc.path, err, tc.code)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown the socket to another uid")
	}
	if err := os.Lchown(sock, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{sock, link} {
		if err := foreignSocket(cfg, p); codeOf(err) != nudge.Forbidden {
			t.Errorf("%s owned by uid 65534: got %v, want FORBIDDEN", p, err)
		}
	}
	if !sameServer(cfg, server{"", sock}, server{"", link}) || sameServer(cfg, server{"", sock}, server{"", file}) {
		t.Error("sameServer: a symlink is its socket, a file is not")
	}
}

func codeOf(err error) nudge.Code {
	var ne *nudge.Error
	if errors.As(err, &ne) {
		return ne.Code
	}
	if err != nil {
		return "?"
	}
	return ""
}

// TestUserServerAttachNamesNoConfig: the control client of a user's own server names no
// configuration (a server ended between dial's has-session and the attach is started by
// the attach, and must not run the user's file); nudge's own server keeps nudge's.
func TestUserServerAttachNamesNoConfig(t *testing.T) {
	cs := &conns{cfg: &Config{ConfigFile: "/etc/nudge-tmux.conf", Logger: hclog.NewNullLogger()}}
	user := &workspace{name: "u", at: place{server{socket: "user-sock"}, "ps"}}
	if got := cs.connConfig(user).ConfigFile; got != "/dev/null" {
		t.Errorf("a user's server: -f %q", got)
	}
	own := &workspace{name: "o", at: place{server{}, SessionName("o")}}
	if got := cs.connConfig(own).ConfigFile; got != "/etc/nudge-tmux.conf" {
		t.Errorf("nudge's server: -f %q", got)
	}
}
