package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
)

// Every hold ends: a fallback relaunch into the runtime's pane ends the program there
// first, also one that ignores SIGHUP, C-c and SIGTERM and left a daemonized child
// (setsid -f), and the trigger's audit says how it ended. Before, kill-window's SIGHUP
// left both running beside the resumed agent.

// stubbornAgent reads its tty (and goes on after a hangup), ignoring every polite signal;
// it writes its pid and its daemon child's next to itself.
const stubbornAgent = `trap '' HUP INT TERM
echo $$ > "$0.main"
setsid -f sh -c 'trap "" HUP INT TERM; echo $$ > "$1.child"; while :; do sleep 0.2; done' child "$0"
while :; do IFS= read -r line || sleep 0.2; done
`

// stubbornSetsid is stubbornAgent whose child leaves the session with setsid but stays
// its child (setsid forks only when it must: in a background job it need not).
const stubbornSetsid = `trap '' HUP INT TERM
echo $$ > "$0.main"
setsid sh -c 'trap "" HUP INT TERM; echo $$ > "$1.child"; while :; do sleep 0.2; done' child "$0" &
while :; do IFS= read -r line || sleep 0.2; done
`

func TestFallbackRelaunchEndsStubbornProgram(t *testing.T) {
	td, _ := ackSetup(t, func(c *daemon.Config) {
		c.Inject.AckTimeout, c.Inject.AckRetries = time.Second, 0
		c.Panes.KillGrace = time.Second
	})
	root := td.cfg.Panes.Roots[0]
	agent := filepath.Join(root, "stubborn.sh")
	if err := os.WriteFile(agent, []byte(stubbornAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	var rt runtimeView
	body := spawnBody{Workspace: "w1", Role: "stubborn", Agent: "fake", Dir: root, SessionID: "sess-stubborn", Argv: []string{"sh", agent}}
	if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &rt); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	pids := stubbornPIDs(t, agent+".main", agent+".child")

	if _, err := td.trigger(map[string]any{"trigger_id": "s1", "workspace": "w1", "agent": "stubborn", "prompt": "wake up"}); err != nil {
		t.Fatal(err)
	}
	got := td.waitTrigger("s1", closed)
	if got.Fallback != "resume" || got.ErrorCode != nudge.AckTimeout {
		t.Fatalf("receipt: %+v", got)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d of the replaced program still runs", pid)
		}
	}
	var step struct{ Ended string }
	for _, r := range td.audit("s1") {
		if r.Event == "fallback_resume_succeeded" {
			_ = json.Unmarshal(r.Detail, &step)
		}
	}
	if !strings.HasPrefix(step.Ended, "ended by SIGKILL after ") {
		t.Errorf("fallback_resume_succeeded: ended %q, want ended by SIGKILL", step.Ended)
	}
}

// stubbornPIDs waits for the pid files and kills those pids when the test ends.
func stubbornPIDs(t *testing.T, files ...string) []int {
	t.Helper()
	var pids []int
	deadline := time.Now().Add(30 * time.Second)
	for _, f := range files {
		for {
			b, _ := os.ReadFile(f)
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				pids = append(pids, pid)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no pid in %s", f)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pids
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(s[i+1:], " Z")
}

// On a workspace bound to another host (a real loopback sshd; its processes are this
// machine's, which lets the test check them), restart and stop end the program there by
// pid over ssh: one that ignores SIGHUP, C-c and SIGTERM, and its child in a session of
// its own (setsid; a child that daemonized is not searched for remotely). Before,
// kill-window and kill-pane left both running.
func TestRemoteRestartAndStopEndStubbornProgram(t *testing.T) {
	h := startSSHHost(t)
	cfg := newTestConfig(t)
	cfg.Panes.SSHConfig = h.config
	cfg.Panes.StopTimeout, cfg.Panes.KillGrace = 300*time.Millisecond, time.Second
	sock := cfg.Panes.SocketName
	t.Cleanup(func() { h.killServer(sock) }) // runs after the daemon stops
	td := startDaemon(t, cfg)
	root := cfg.Panes.Roots[0]
	agent := filepath.Join(root, "stubborn.sh")
	if err := os.WriteFile(agent, []byte(stubbornSetsid), 0o755); err != nil {
		t.Fatal(err)
	}
	var rt runtimeView
	body := spawnBody{Workspace: "wr", Role: "s", Agent: "shell", Dir: root, Argv: []string{"sh", agent}, Host: h.alias}
	if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &rt); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	for _, op := range []string{"restart", "stop"} {
		pids := stubbornPIDs(t, agent+".main", agent+".child")
		os.Remove(agent + ".main")
		os.Remove(agent + ".child")
		if err := td.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/"+op, nil, nil); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		for _, pid := range pids {
			if alive(pid) {
				t.Errorf("%s: pid %d of the program still runs", op, pid)
			}
		}
		event := map[string]string{"restart": "runtime_program_ended", "stop": "runtime_stopped"}[op]
		var recs []nudge.AuditRecord
		if err := td.c.do(t0(), "GET", "/v1/audit?runtime="+rt.RuntimeID+"&event="+event, nil, &recs); err != nil {
			t.Fatal(err)
		}
		var how struct{ How string }
		if len(recs) > 0 {
			_ = json.Unmarshal(recs[len(recs)-1].Detail, &how)
		}
		if !strings.HasPrefix(how.How, "ended by SIGKILL after ") || !strings.Contains(how.How, "on host "+h.alias) {
			t.Errorf("%s: %s audit says %q", op, event, how.How)
		}
		if op == "restart" {
			td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
		}
	}
}
