package cli

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// multiHostSetup starts a real sshd on loopback and one daemon serving a local
// workspace (wl) and a workspace bound to the ssh host (wr), each running bash.
func multiHostSetup(t *testing.T) (*testDaemon, *sshHost, runtimeView, runtimeView) {
	t.Helper()
	h := startSSHHost(t)
	cfg := collisionConfig(t)
	cfg.Inject.MaxDefer = 45 * time.Second // the host-down phase waits for a redial (backoff up to 5s)
	cfg.Inject.RateLimit = 1000            // 12 triggers to one runtime in a row is over the default 10/min
	cfg.Panes.SSHConfig = h.config
	sock := cfg.Panes.SocketName
	t.Cleanup(func() { h.killServer(sock) }) // runs after the daemon stops
	td := startDaemon(t, cfg)

	local := td.spawnShell("wl", "a", "bash", "--norc", "--noprofile")
	var remote runtimeView
	body := spawnBody{Workspace: "wr", Role: "b", Agent: "shell", Dir: cfg.Panes.Roots[0],
		Argv: []string{"bash", "--norc", "--noprofile"}, Host: h.alias}
	if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &remote); err != nil {
		t.Fatalf("spawn on the ssh host: %v", err)
	}
	if remote.Host != h.alias {
		t.Fatalf("runtime record names host %q, want %q", remote.Host, h.alias)
	}
	remote = td.waitRuntime(remote.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	td.tmux("send-keys", "-t", local.PaneID, "-l", "PS1='$ '")
	td.tmux("send-keys", "-t", local.PaneID, "Enter")
	h.tmux(sock, "send-keys", "-t", remote.PaneID, "-l", "PS1='$ '")
	h.tmux(sock, "send-keys", "-t", remote.PaneID, "Enter")
	for _, id := range []string{local.RuntimeID, remote.RuntimeID} {
		td.waitRuntime(id, func(r runtimeView) bool { return r.Readiness == "READY" && !r.OperatorBusy })
	}
	// The remote workspace's session is on the ssh host's tmux server only.
	if !strings.Contains(h.tmux(sock, "list-sessions", "-F", "#{session_name}"), "agents_wr") {
		t.Fatal("agents_wr is not on the ssh host's tmux server")
	}
	if strings.Contains(td.tmux("list-sessions", "-F", "#{session_name}"), "agents_wr") {
		t.Fatal("agents_wr is on the local tmux server")
	}
	return td, h, local, remote
}

// remoteConn waits for the workspace's control connection.
func (td *testDaemon) remoteConn(ws string) *controlmode.Conn {
	td.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := td.d.Rooms().Registry.Conn(ws); err == nil {
			return c
		}
		if time.Now().After(deadline) {
			td.t.Fatalf("no control connection for %s", ws)
		}
	}
}

// countEnvelopes counts each trigger's envelope in a pane's whole history.
func countEnvelopes(screen string, ids []string) map[string]int {
	n := map[string]int{}
	for _, id := range ids {
		n[id] = strings.Count(screen, "[BRIDGE_TRIGGER id="+id+" ")
	}
	return n
}

// Issue 17: one daemon serves a local and an ssh-bound workspace; the remote control
// connection's ssh process is killed mid-stream and redialled: no trigger lost, none
// typed twice. Then the host goes away: triggers are held as HOST_UNREACHABLE with a
// deadline and delivered once when it is back.
func TestMultiHostTriggersSurviveSSHCut(t *testing.T) {
	td, h, local, remote := multiHostSetup(t)
	sock := td.cfg.Panes.SocketName
	firstPid := td.remoteConn("wr").Pid()
	if out, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", firstPid)); strings.TrimSpace(string(out)) != "ssh" {
		t.Fatalf("the remote control client (pid %d) is %q, not ssh", firstPid, out)
	}

	var remoteIDs, localIDs []string
	send := func(ws, agent, id string) {
		t.Helper()
		tr, err := td.trigger(map[string]any{"trigger_id": id, "workspace": ws, "agent": agent,
			"thread_id": "th-" + id, "prompt": "echo " + id})
		if err != nil {
			t.Fatalf("trigger %s: %v", id, err)
		}
		if tr.State == "failed" {
			t.Fatalf("trigger %s failed at once: %+v", id, tr)
		}
	}
	const n = 12
	for i := range n {
		rid, lid := fmt.Sprintf("r%02d", i), fmt.Sprintf("l%02d", i)
		remoteIDs, localIDs = append(remoteIDs, rid), append(localIDs, lid)
		send("wr", "b", rid)
		send("wl", "a", lid)
		if i == n/2 {
			killPid(t, firstPid) // mid-stream: triggers queued and one likely in flight
		}
		time.Sleep(30 * time.Millisecond)
	}
	for _, id := range append(append([]string{}, remoteIDs...), localIDs...) {
		got := td.waitTrigger(id, closed)
		if got.State != "acked" && got.State != "submitted" {
			t.Fatalf("%s: %+v", id, got)
		}
	}
	if c, err := td.d.Rooms().Registry.Conn("wr"); err != nil || c.Pid() == firstPid {
		t.Fatalf("the remote connection was not redialled: %v", err)
	}
	rscreen := h.tmux(sock, "capture-pane", "-p", "-J", "-S", "-", "-t", remote.PaneID)
	lscreen := td.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", local.PaneID)
	for id, c := range countEnvelopes(rscreen, remoteIDs) {
		if c != 1 {
			t.Fatalf("remote %s typed %d times:\n%s", id, c, rscreen)
		}
	}
	for id, c := range countEnvelopes(lscreen, localIDs) {
		if c != 1 {
			t.Fatalf("local %s typed %d times:\n%s", id, c, lscreen)
		}
	}
	if strings.Contains(lscreen, "id=r") || strings.Contains(rscreen, "id=l") {
		t.Fatal("a trigger reached the other workspace's pane")
	}

	// The host goes away: the listener stops and the control connection is cut.
	c := td.remoteConn("wr")
	h.stop()
	killPid(t, c.Pid())
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := td.d.Rooms().Registry.Conn("wr"); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the remote connection still reads up with sshd stopped")
		}
		time.Sleep(20 * time.Millisecond)
	}
	send("wr", "b", "down1")
	held := td.waitTrigger("down1", func(tr nudge.Trigger) bool { return tr.State == "deferred" })
	if held.ErrorCode != "HOST_UNREACHABLE" || held.DeferredUntil == nil || !strings.Contains(held.Message, "host unreachable") ||
		held.Host != h.alias {
		t.Fatalf("held trigger: %+v", held)
	}
	send("wl", "a", "ldown1") // the local workspace is not held by the remote one
	if got := td.waitTrigger("ldown1", closed); got.State != "acked" && got.State != "submitted" {
		t.Fatalf("local trigger while the host is down: %+v", got)
	}
	h.start()
	got := td.waitTrigger("down1", closed)
	if got.State != "acked" && got.State != "submitted" {
		t.Fatalf("after the host came back: %+v", got)
	}
	rscreen = h.tmux(sock, "capture-pane", "-p", "-J", "-S", "-", "-t", remote.PaneID)
	if c := countEnvelopes(rscreen, []string{"down1"})["down1"]; c != 1 {
		t.Fatalf("down1 typed %d times:\n%s", c, rscreen)
	}

	// The binding is durable: a restarted daemon finds the remote pane through ssh again.
	td.stop()
	td = startDaemon(t, td.cfg)
	rt := td.waitRuntime(remote.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" && r.Readiness == "READY" })
	if rt.Host != h.alias || rt.PaneID != remote.PaneID {
		t.Fatalf("after a restart: %+v", rt.Runtime)
	}
	send("wr", "b", "after1")
	if got := td.waitTrigger("after1", closed); got.State != "acked" && got.State != "submitted" {
		t.Fatalf("after a restart: %+v", got)
	}
	rscreen = h.tmux(sock, "capture-pane", "-p", "-J", "-S", "-", "-t", remote.PaneID)
	if c := countEnvelopes(rscreen, []string{"after1"})["after1"]; c != 1 {
		t.Fatalf("after1 typed %d times:\n%s", c, rscreen)
	}
}

// Issue 17: a human key typed through the remote tmux (a client attached over ssh in a
// pseudo-terminal) holds a trigger for that workspace as OPERATOR_BUSY.
func TestMultiHostHumanKeyOnRemoteHolds(t *testing.T) {
	td, h, _, remote := multiHostSetup(t)
	sock := td.cfg.Panes.SocketName
	cmd := exec.Command("ssh", "-F", h.config, "-tt", "--", h.alias,
		"tmux -L "+sock+" attach-session -t "+remote.PaneID)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, ptmx) //nolint:errcheck // drains the client's screen until close
	op := &operator{t: t, ptmx: ptmx, cmd: cmd}
	t.Cleanup(op.close)
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(h.tmux(sock, "list-clients", "-F", "#{client_control_mode}"), "0") {
		if time.Now().After(deadline) {
			t.Fatal("operator client never attached through ssh")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// nudge's key binding is on the remote server (its key-event connection went there).
	deadline = time.Now().Add(15 * time.Second)
	for !strings.Contains(h.tmux(sock, "list-keys", "-T", "root"), "nudge-human") {
		if time.Now().After(deadline) {
			t.Fatal("the Any binding was never installed on the ssh host's tmux server")
		}
		time.Sleep(50 * time.Millisecond)
	}
	op.typeKeys("echo human-was-here")
	td.waitRuntime(remote.RuntimeID, func(r runtimeView) bool { return r.OperatorBusy })
	tr, err := td.trigger(map[string]any{"trigger_id": "h1", "workspace": "wr", "agent": "b", "prompt": "automation text"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.State != "deferred" || tr.ErrorCode != "OPERATOR_BUSY" || tr.DeferredUntil == nil {
		t.Fatalf("first answer: %+v", tr)
	}
	op.typeKeys("\r")
	got := td.waitTrigger("h1", closed)
	if got.State != "acked" && got.State != "submitted" {
		t.Fatalf("after the operator went quiet: %+v", got)
	}

	// nudge ls names the host of each runtime.
	if out, _, code := td.runCLI("ls"); code != 0 || !strings.Contains(out, "HOST") || !strings.Contains(out, h.alias) {
		t.Fatalf("nudge ls: exit %d\n%s", code, out)
	}

	// nudge doctor checks both hosts in use; an unreachable one fails it.
	out, errOut, code := td.runCLI("doctor", "--ssh-config", h.config)
	if code != 0 || !strings.Contains(out, "ok    "+h.alias+": ssh reachable") || !strings.Contains(out, h.alias+": tmux ") ||
		!strings.Contains(out, h.alias+": agent program bash") || !strings.Contains(out, "local: tmux ") {
		t.Fatalf("doctor: exit %d\n%s%s", code, out, errOut)
	}
	h.stop()
	out, _, code = td.runCLI("doctor", "--ssh-config", h.config)
	if code != 1 || !strings.Contains(out, "FAIL  "+h.alias+": ssh cannot reach it") {
		t.Fatalf("doctor with the host down: exit %d\n%s", code, out)
	}

	// A spawn on a host that cannot be reached says so; a workspace stays on its host.
	var rt runtimeView
	err = td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: "wx", Role: "c", Agent: "shell",
		Dir: td.cfg.Panes.Roots[0], Argv: []string{"bash"}, Host: h.alias}, &rt)
	wantAPIError(t, "spawn on a host that is down", err, "HOST_UNREACHABLE", h.alias)
	err = td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: "wr", Role: "c", Agent: "shell",
		Dir: td.cfg.Panes.Roots[0], Argv: []string{"bash"}, Host: "other-box"}, &rt)
	wantAPIError(t, "spawn into a workspace bound to another host", err, "CONFLICT", "bound to host")
}

// Issue 17: a host that stays away past the deadline ends the hold: the trigger takes the
// fallback chain, which cannot reach the host either, and fails with HOST_UNREACHABLE.
func TestMultiHostUnreachablePastDeadlineFails(t *testing.T) {
	h := startSSHHost(t)
	cfg := newTestConfig(t)
	cfg.Inject.MaxDefer = 3 * time.Second
	cfg.Panes.SSHConfig = h.config
	sock := cfg.Panes.SocketName
	t.Cleanup(func() { h.killServer(sock) })
	td := startDaemon(t, cfg)
	var rt runtimeView
	if err := td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: "wr", Role: "b", Agent: "shell",
		Dir: cfg.Panes.Roots[0], Argv: []string{"bash", "--norc", "--noprofile"}, Host: h.alias}, &rt); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	c := td.remoteConn("wr")
	h.stop()
	killPid(t, c.Pid())
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := td.d.Rooms().Registry.Conn("wr"); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the remote connection still reads up with sshd stopped")
		}
	}
	if _, err := td.trigger(map[string]any{"trigger_id": "gone1", "workspace": "wr", "agent": "b", "prompt": "echo gone1"}); err != nil {
		t.Fatal(err)
	}
	got := td.waitTrigger("gone1", closed)
	if got.State != "failed" || got.ErrorCode != "HOST_UNREACHABLE" {
		t.Fatalf("receipt: %+v", got)
	}
}

// A host that ssh would read as an option, or that holds blanks or control bytes, is
// refused before anything runs.
func TestSpawnRefusesABadHost(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	for _, host := range []string{"-oProxyCommand=touch /tmp/x", "a b", "box\n", "box\x00"} {
		err := td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: "wx", Role: "r", Agent: "shell",
			Argv: []string{"bash"}, Host: host}, nil)
		wantAPIError(t, fmt.Sprintf("host %q", host), err, "BAD_REQUEST", "invalid host")
	}
	if out, _ := exec.Command("tmux", "-L", td.cfg.Panes.SocketName, "list-sessions").CombinedOutput(); strings.Contains(string(out), "agents_wx") {
		t.Fatalf("a refused spawn created a session: %s", out)
	}
}
