package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// Issue 32 item 1: a token with spawn on workspace C names nudge's own tmux server by
// another spelling than its -L name (its socket path, a symlink or a hard link to it, the
// path with // or /./ in it) to register B's pane agents_B:dev.0 into C: C's token would
// then type into B's agent, read its screen and get its replies. Every spelling of
// nudge's own server is that server; a pane already held is held whatever spelling
// names its server; a tmux server of another uid is refused.

// ownSocketPath is nudge's own tmux server's socket path, as tmux reports it.
func ownSocketPath(td *testDaemon) string {
	td.t.Helper()
	return strings.TrimSpace(td.tmux("display-message", "-p", "#{socket_path}"))
}

// wantRefused checks a register was refused with an API error (any code but 2xx) and
// that nothing was registered under id.
func wantRefused(t *testing.T, td *testDaemon, what string, err error, id string) {
	t.Helper()
	var ae *api.Error
	if !errors.As(err, &ae) {
		t.Errorf("%s: registered (err %v), want refused", what, err)
		td.c.do(t0(), "DELETE", "/v1/runtimes/"+id, nil, nil) //nolint:errcheck // the next case starts clean
		return
	}
	t.Logf("%s: %s %s", what, ae.ErrorCode, ae.Message)
	var rt runtimeView
	if err := td.c.do(t0(), "GET", "/v1/runtimes/"+id, nil, &rt); err == nil && rt.Status != "deregistered" {
		t.Errorf("%s: refused (%v) but %s exists: %+v", what, ae, id, rt.Runtime)
	}
}

func TestRegisterOwnServerByPathRefused(t *testing.T) {
	cfg := newTestConfig(t)
	td := startDaemon(t, cfg)
	rawCat(t, td, "wB", "dev")
	spy := td.as(td.issue(t, "--subject", "c-orch", "--workspace", "wC", "--verbs", "spawn,trigger", "--ttl", "1h"))
	sock := ownSocketPath(td)
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	if err := os.Symlink(sock, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(filepath.Dir(sock), "hard-"+filepath.Base(sock))
	if err := os.Link(sock, hard); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(hard) })
	dirLink := filepath.Join(dir, "dir")
	if err := os.Symlink(filepath.Dir(sock), dirLink); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(mustGetwd(t), sock)
	if err != nil {
		t.Fatal(err)
	}
	spellings := map[string]string{
		"path":         sock,
		"double slash": strings.Replace(sock, "/", "//", -1),
		"dot":          filepath.Dir(sock) + "/./" + filepath.Base(sock),
		"dotdot":       filepath.Dir(sock) + "/../" + filepath.Base(filepath.Dir(sock)) + "/" + filepath.Base(sock),
		"symlink":      link,
		"hard link":    hard,
		"dir symlink":  dirLink + "/" + filepath.Base(sock),
		"relative":     rel,
		"proc root":    "/proc/self/root" + sock,
	}
	for name, spelling := range spellings {
		for _, target := range []string{"agents_wB:dev.0", "agents_wB"} {
			what := fmt.Sprintf("%s %q target %s", name, spelling, target)
			for _, c := range []*client{spy, td.c} { // the scoped token, and the daemon's own caller
				var rt runtimeView
				err := c.do(t0(), "POST", "/v1/runtimes/register", api.RegisterRequest{Workspace: "wC", Role: "spy", Agent: "shell",
					Target: target, TmuxSocket: spelling}, &rt)
				wantRefused(t, td, what, err, "rt_wC.spy")
			}
		}
	}
	// The pane's own id on nudge's server, by path: another workspace's session too.
	paneID := strings.TrimSpace(td.tmux("display-message", "-p", "-t", "=agents_wB:dev.0", "#{pane_id}"))
	err = spy.do(t0(), "POST", "/v1/runtimes/register", api.RegisterRequest{Workspace: "wC", Role: "spy", Agent: "shell",
		Target: paneID, TmuxSocket: sock}, nil)
	wantRefused(t, td, "pane id by path", err, "rt_wC.spy")
	var list []runtimeView
	if err := td.c.do(t0(), "GET", "/v1/runtimes", nil, &list); err != nil {
		t.Fatal(err)
	}
	for _, rt := range list {
		if rt.WorkspaceID == "wC" {
			t.Errorf("workspace wC holds %s (%s on %q)", rt.RuntimeID, rt.Target, rt.TmuxSocket)
		}
	}
}

// TestRegisterGroupedOrLinkedRefused: a window of workspace B's session shown in another
// session of nudge's own server too (a session grouped with agents_B, as an operator makes
// one to watch it; a window linked into another session) is still B's: C naming the pane
// by that other session, or by its id, is refused.
func TestRegisterGroupedOrLinkedRefused(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rawCat(t, td, "wB", "dev")
	td.tmux("new-window", "-d", "-t", "=agents_wB:", "-n", "side", "cat") // B's, not a runtime
	td.tmux("new-session", "-d", "-t", "agents_wB", "-s", "0view")        // grouped with B's session
	td.tmux("new-session", "-d", "-s", "0other")
	td.tmux("link-window", "-d", "-s", "=agents_wB:side", "-t", "=0other:")
	spy := td.as(td.issue(t, "--subject", "c-orch", "--workspace", "wC", "--verbs", "spawn,trigger", "--ttl", "1h"))
	paneID := strings.TrimSpace(td.tmux("display-message", "-p", "-t", "=agents_wB:side.0", "#{pane_id}"))
	for _, target := range []string{"0view:side.0", "0other:side.0", "0view:dev.0", paneID} {
		err := spy.do(t0(), "POST", "/v1/runtimes/register", api.RegisterRequest{Workspace: "wC", Role: "spy", Agent: "shell",
			Target: target, Unmanaged: true}, nil)
		wantRefused(t, td, "target "+target, err, "rt_wC.spy")
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// TestRegisterPaneTakenAnySpelling: a user's pane registered into workspace D by the
// server's name is taken for workspace E naming the same server by its socket path or a
// symlink.
func TestRegisterPaneTakenAnySpelling(t *testing.T) {
	cfg := newTestConfig(t)
	td := startDaemon(t, cfg)
	u := newUserTmux(t)
	u.tmux("new-session", "-d", "-s", "d-ps", "cat")
	sock := u.tmux("display-message", "-p", "#{socket_path}")
	if _, err := td.register(api.RegisterRequest{Workspace: "wD", Role: "ps", Agent: "shell", Target: "d-ps", TmuxSocket: u.name, Unmanaged: true}); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "s")
	if err := os.Symlink(sock, link); err != nil {
		t.Fatal(err)
	}
	for _, spelling := range []string{sock, link, strings.Replace(sock, "/", "//", -1)} {
		_, err := td.register(api.RegisterRequest{Workspace: "wE", Role: "spy", Agent: "shell", Target: "d-ps", TmuxSocket: spelling, Unmanaged: true})
		var ae *api.Error
		if !errors.As(err, &ae) || ae.ErrorCode != nudge.Conflict {
			t.Errorf("%q: got %v, want CONFLICT", spelling, err)
			td.c.do(t0(), "DELETE", "/v1/runtimes/rt_wE.spy", nil, nil) //nolint:errcheck // the next case starts clean
		}
	}
}

// TestRegisterOtherUIDServerRefused: a tmux server run by another uid (its socket owned
// by it) is not adopted, by path or by a symlink to it, even by a daemon running as root
// (which tmux lets attach to any server).
func TestRegisterOtherUIDServerRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a tmux server as another uid (setpriv --reuid=65534)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv not installed")
	}
	cfg := newTestConfig(t)
	td := startDaemon(t, cfg)
	dir, err := os.MkdirTemp("", "nobody-tmux")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	tmuxBin, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal(err)
	}
	nobody := func(args ...string) (string, error) {
		cmd := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", tmuxBin, "-S", sock, "-f", "/dev/null"}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "TERM=xterm"}
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := nobody("new-session", "-d", "-s", "bait", "cat"); err != nil {
		t.Skipf("cannot start a tmux server as uid 65534: %v: %s", err, out)
	}
	t.Cleanup(func() { nobody("kill-server") }) //nolint:errcheck // the test's own server
	link := filepath.Join(t.TempDir(), "s")
	if err := os.Symlink(sock, link); err != nil {
		t.Fatal(err)
	}
	for _, spelling := range []string{sock, link} {
		for _, unmanaged := range []bool{false, true} {
			_, err := td.register(api.RegisterRequest{Workspace: "wN", Role: "ps", Agent: "shell", Target: "bait", TmuxSocket: spelling, Unmanaged: unmanaged})
			wantRefused(t, td, fmt.Sprintf("%q unmanaged=%v", spelling, unmanaged), err, "rt_wN.ps")
		}
	}
}

// TestRegisterRemoteOwnServerByPath: on an ssh host, where no socket file can be compared,
// nudge's own server named by its socket path is still nudge's own (the same server pid):
// another workspace's session there is refused, and a pane workspace D holds is taken
// for workspace E whatever it calls the server.
func TestRegisterRemoteOwnServerByPath(t *testing.T) {
	h := startSSHHost(t)
	cfg := newTestConfig(t)
	cfg.Panes.SSHConfig = h.config
	sock := cfg.Panes.SocketName
	t.Cleanup(func() { h.killServer(sock) }) // runs after the daemon stops
	td := startDaemon(t, cfg)
	var b runtimeView
	body := spawnBody{Workspace: "wB", Role: "dev", Agent: "shell", Dir: cfg.Panes.Roots[0], Argv: []string{"cat"}, Host: h.alias}
	if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &b); err != nil {
		t.Fatalf("spawn on the ssh host: %v", err)
	}
	td.waitRuntime(b.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	path := strings.TrimSpace(h.tmux(sock, "display-message", "-p", "#{socket_path}"))
	spy := td.as(td.issue(t, "--subject", "c-orch", "--workspace", "wC,wE", "--verbs", "spawn", "--ttl", "1h"))
	for _, spelling := range []string{path, strings.Replace(path, "/", "//", -1)} {
		err := spy.do(t0(), "POST", "/v1/runtimes/register", api.RegisterRequest{Workspace: "wC", Role: "spy", Agent: "shell",
			Host: h.alias, Target: "agents_wB:dev.0", TmuxSocket: spelling}, nil)
		wantRefused(t, td, "remote "+spelling, err, "rt_wC.spy")
	}
	// A pane of another session on nudge's own server there, held by workspace D.
	h.tmux(sock, "new-session", "-d", "-s", "plain", "cat")
	d, err := td.register(api.RegisterRequest{Workspace: "wD", Role: "ps", Agent: "shell", Host: h.alias, Target: "plain", Unmanaged: true})
	if err != nil {
		t.Fatal(err)
	}
	if d.TmuxSocket != "" {
		t.Fatalf("wD's record names server %q, want nudge's own", d.TmuxSocket)
	}
	err = spy.do(t0(), "POST", "/v1/runtimes/register", api.RegisterRequest{Workspace: "wE", Role: "spy", Agent: "shell",
		Host: h.alias, Target: "plain", TmuxSocket: path, Unmanaged: true}, nil)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.ErrorCode != nudge.Conflict {
		t.Errorf("wD's pane by path for wE: got %v, want CONFLICT", err)
	}
	// A user's own server there, by its name for wF and by its path for wG.
	user := "user-" + sock
	t.Cleanup(func() { h.killServer(user) })
	h.tmux(user, "-f", "/dev/null", "new-session", "-d", "-s", "ups", "cat")
	if _, err := td.register(api.RegisterRequest{Workspace: "wF", Role: "ps", Agent: "shell", Host: h.alias, Target: "ups", TmuxSocket: user, Unmanaged: true}); err != nil {
		t.Fatal(err)
	}
	userPath := strings.TrimSpace(h.tmux(user, "display-message", "-p", "#{socket_path}"))
	_, err = td.register(api.RegisterRequest{Workspace: "wG", Role: "spy", Agent: "shell", Host: h.alias, Target: "ups", TmuxSocket: userPath, Unmanaged: true})
	if !errors.As(err, &ae) || ae.ErrorCode != nudge.Conflict {
		t.Errorf("wF's pane on the user's server by path for wG: got %v, want CONFLICT", err)
	}
}
