package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/api"

	"github.com/nudgehq/nudge"
)

// chaosDaemon is `nudge serve` run as a subprocess on a private tmux server, so a test
// can kill -9 it, stop it, and start it again on the same state dir and socket. The tmux
// server and the agents in its panes are not children of the daemon: they survive it.
type chaosDaemon struct {
	t          *testing.T
	bin        string
	args       []string // serve flags beyond the fixed ones
	stateDir   string
	socket     string
	tmuxSocket string
	root       string // allowed workspace root; the agents' files live here
	logPath    string // every incarnation's stderr, appended
	c          *client

	mu     sync.Mutex
	cmd    *exec.Cmd
	waitc  chan error
	starts int
}

// newChaosDaemon prepares (but does not start) a subprocess daemon.
func newChaosDaemon(t *testing.T, bin string, extra ...string) *chaosDaemon {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "nc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cd := &chaosDaemon{
		t: t, bin: bin, args: extra, stateDir: privateTempDir(t),
		socket:     filepath.Join(sockDir, "n.sock"),
		tmuxSocket: fmt.Sprintf("nudge-t-c%d-%d", os.Getpid(), testSeq.Add(1)),
		root:       root,
	}
	cd.logPath = filepath.Join(cd.stateDir, "daemon.log")
	cd.c = newClient(cd.socket, "")
	server := cd.tmuxSocket
	t.Cleanup(func() { exec.Command("tmux", "-L", server, "kill-server").Run() })
	t.Cleanup(cd.kill) // runs before the tmux server is killed
	t.Cleanup(cd.keepLogOnFailure)
	return cd
}

// start runs a new incarnation and waits until it answers.
func (cd *chaosDaemon) start() {
	cd.t.Helper()
	logf, err := os.OpenFile(cd.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		cd.t.Fatal(err)
	}
	defer logf.Close()
	args := append([]string{"serve", "--state-dir", cd.stateDir, "--socket", cd.socket,
		"--tmux-socket", cd.tmuxSocket, "--tmux-config", "/dev/null", "--root", cd.root,
		"--log-level", "debug"}, cd.args...)
	cmd := exec.Command(cd.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "TMUX=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cd.mu.Lock()
	if err := cmd.Start(); err != nil {
		cd.mu.Unlock()
		cd.t.Fatalf("start daemon: %v", err)
	}
	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }()
	cd.cmd, cd.waitc = cmd, waitc
	cd.starts++
	cd.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := cd.c.do(ctx, "GET", "/v1/health", nil, nil)
		cancel()
		if err == nil {
			return
		}
		select {
		case err := <-waitc:
			waitc <- err
			cd.t.Fatalf("daemon exited at start: %v\n%s", err, cd.logTail(4000))
		case <-time.After(20 * time.Millisecond):
		}
	}
	cd.t.Fatalf("daemon never answered\n%s", cd.logTail(4000))
}

// signal sends sig to the running incarnation (not to its children).
func (cd *chaosDaemon) signal(sig syscall.Signal) {
	cd.mu.Lock()
	defer cd.mu.Unlock()
	if cd.cmd != nil {
		cd.cmd.Process.Signal(sig)
	}
}

// kill9 SIGKILLs the running incarnation and waits for it. Its children (the tmux -C
// clients) see EOF on their stdin and exit on their own.
func (cd *chaosDaemon) kill9() {
	cd.mu.Lock()
	cmd, waitc := cd.cmd, cd.waitc
	cd.cmd = nil
	cd.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-waitc
}

// stop ends the running incarnation cleanly (SIGTERM), or kills it after a while.
func (cd *chaosDaemon) stop() error {
	cd.mu.Lock()
	cmd, waitc := cd.cmd, cd.waitc
	cd.cmd = nil
	cd.mu.Unlock()
	if cmd == nil {
		return nil
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-waitc:
		return err
	case <-time.After(20 * time.Second):
		cmd.Process.Signal(syscall.SIGKILL)
		<-waitc
		return errors.New("daemon did not stop on SIGTERM within 20s")
	}
}

// kill is the cleanup: the daemon and whatever is left of its process group.
func (cd *chaosDaemon) kill() {
	cd.mu.Lock()
	cmd, waitc := cd.cmd, cd.waitc
	cd.cmd = nil
	cd.mu.Unlock()
	if cmd == nil {
		return
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-waitc
}

func (cd *chaosDaemon) pid() int {
	cd.mu.Lock()
	defer cd.mu.Unlock()
	if cd.cmd == nil {
		return 0
	}
	return cd.cmd.Process.Pid
}

// rssKB is the running incarnation's resident set (VmRSS, kB).
func (cd *chaosDaemon) rssKB() int {
	return procStatusKB(cd.pid(), "VmRSS:")
}

func procStatusKB(pid int, field string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return n
		}
	}
	return 0
}

func (cd *chaosDaemon) log() string {
	b, _ := os.ReadFile(cd.logPath)
	return string(b)
}

func (cd *chaosDaemon) logTail(n int) string {
	s := cd.log()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}

// keepLogOnFailure copies a failed test's daemon log (all incarnations) to the temp dir.
func (cd *chaosDaemon) keepLogOnFailure() {
	if !cd.t.Failed() {
		return
	}
	f, err := os.CreateTemp("", "nudge-chaos-*.log")
	if err != nil {
		return
	}
	f.WriteString(cd.log())
	panes, _ := cd.tmux("list-panes", "-a", "-F", "#{pane_id} #{session_name}:#{window_name} #{pane_pid} #{pane_dead} #{pane_current_command}")
	f.WriteString("\n=== panes\n" + panes)
	clients, _ := cd.tmux("list-clients", "-F", "#{client_name} #{client_pid} #{client_flags}")
	f.WriteString("\n=== clients\n" + clients)
	for _, line := range strings.Fields(panes) {
		if strings.HasPrefix(line, "%") {
			out, _ := cd.tmux("capture-pane", "-p", "-J", "-S", "-60", "-t", line)
			f.WriteString("\n=== " + line + "\n" + out)
			cd.tmux("send-keys", "-t", line, "-l", "PROBE-ECHO")
			time.Sleep(300 * time.Millisecond)
			out, _ = cd.tmux("capture-pane", "-p", "-J", "-t", line)
			f.WriteString("\n=== " + line + " after a probe (echoed: " + strconv.FormatBool(strings.Contains(out, "PROBE-ECHO")) + ")\n")
		}
	}
	f.Close()
	cd.t.Logf("daemon log (all incarnations): %s", f.Name())
}

// tmux runs a tmux command on the private server.
func (cd *chaosDaemon) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", cd.tmuxSocket}, args...)...).CombinedOutput()
	return string(out), err
}

// call is one API request with a deadline, so a stopped daemon cannot hang the test.
func (cd *chaosDaemon) call(method, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return cd.c.do(ctx, method, path, body, out)
}

// spawn starts a managed runtime and waits until it is ready.
func (cd *chaosDaemon) spawn(body spawnBody) runtimeView {
	cd.t.Helper()
	var rt runtimeView
	if body.Dir == "" {
		body.Dir = cd.root
	}
	if err := cd.call("POST", "/v1/runtimes", body, &rt); err != nil {
		cd.t.Fatalf("spawn %s: %v", body.Role, err)
	}
	return cd.waitRuntime(rt.RuntimeID, "ready", 30*time.Second)
}

// waitRuntime polls a runtime until its status is want.
func (cd *chaosDaemon) waitRuntime(id, want string, within time.Duration) runtimeView {
	cd.t.Helper()
	var rt runtimeView
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		var got runtimeView // fresh per answer: an absent omitempty key leaves a reused field as it was
		if err := cd.call("GET", "/v1/runtimes/"+id, nil, &got); err == nil {
			if rt = got; string(rt.Status) == want {
				return rt
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	cd.t.Fatalf("runtime %s never became %s; last %+v\n%s", id, want, rt.Runtime, cd.logTail(3000))
	return rt
}

// retryable reports whether a trigger request should be sent again with the same id:
// the daemon was not there, or the connection broke before an answer.
func retryable(err error) bool {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.ErrorCode == nudge.Unavailable
	}
	return err != nil
}

// submitRetry posts a trigger as an orchestrator does: on a connection error it sends the
// same request (same trigger_id) again until it gets an answer. It returns the first 2xx
// answer, or the first error answer that is not about the connection.
func (cd *chaosDaemon) submitRetry(ctx context.Context, req map[string]any) (nudge.Trigger, int, error) {
	tries := 0
	for {
		tries++
		var tr nudge.Trigger
		rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := cd.c.do(rctx, "POST", "/v1/triggers", req, &tr)
		cancel()
		if err == nil || !retryable(err) || ctx.Err() != nil {
			return tr, tries, err
		}
		select {
		case <-ctx.Done():
			return tr, tries, ctx.Err()
		case <-time.After(30 * time.Millisecond):
		}
	}
}

// getTrigger reads a receipt, retrying across daemon restarts.
func (cd *chaosDaemon) getTrigger(id string) (nudge.Trigger, error) {
	var tr nudge.Trigger
	err := cd.call("GET", "/v1/triggers/"+id, nil, &tr)
	return tr, err
}

// waitClosed polls every id until its receipt is closed, and returns the receipts.
func (cd *chaosDaemon) waitClosed(ids []string, within time.Duration) map[string]nudge.Trigger {
	cd.t.Helper()
	got := map[string]nudge.Trigger{}
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		open := 0
		for _, id := range ids {
			if t, ok := got[id]; ok && t.Closed {
				continue
			}
			tr, err := cd.getTrigger(id)
			if err == nil {
				got[id] = tr
			}
			if err != nil || !tr.Closed {
				open++
			}
		}
		if open == 0 {
			return got
		}
		time.Sleep(200 * time.Millisecond)
	}
	var open []string
	for _, id := range ids {
		if !got[id].Closed {
			open = append(open, fmt.Sprintf("%s(%s %s)", id, got[id].State, got[id].Message))
		}
	}
	cd.t.Fatalf("%d triggers never closed: %v\n%s", len(open), open, cd.logTail(6000))
	return got
}

// auditVerify asks the daemon to verify the audit hash chain.
func (cd *chaosDaemon) auditVerify() (ok bool, records int, msg string) {
	cd.t.Helper()
	var res struct {
		OK      bool   `json:"ok"`
		Records int    `json:"records"`
		Error   string `json:"error"`
	}
	if err := cd.call("GET", "/v1/audit?verify=1", nil, &res); err != nil {
		cd.t.Fatalf("audit verify: %v", err)
	}
	return res.OK, res.Records, res.Error
}

// auditStory is the trigger's audit events, space separated.
func (cd *chaosDaemon) auditStory(id string) string {
	var recs []nudge.AuditRecord
	if err := cd.call("GET", "/v1/audit?trigger="+id, nil, &recs); err != nil {
		return "audit: " + err.Error()
	}
	return coded(recs)
}

// countIDs counts envelope ids ("id=X ") in an agent's file.
func countIDs(file string) map[string]int {
	b, _ := os.ReadFile(file)
	n := map[string]int{}
	s := string(b)
	for {
		i := strings.Index(s, "[BRIDGE_TRIGGER id=")
		if i < 0 {
			return n
		}
		s = s[i+len("[BRIDGE_TRIGGER id="):]
		j := strings.IndexByte(s, ' ')
		if j < 0 {
			return n
		}
		n[s[:j]]++
		s = s[j:]
	}
}

// lineAgent is a managed agent that appends every line it reads from its tty (cooked
// mode, echo on, so nudge sees the echo and the prompt stays in the pane's history) to
// the file $1; with $2 = ack it prints each envelope's ack marker after a short pause, so
// its triggers sit in `submitted` awaiting the ack for a while.
const lineAgent = `
file=$1 mode=$2
while IFS= read -r line; do
  printf '%s\n' "$line" >> "$file"
  [ "$mode" = ack ] || continue
  id=$(printf '%s\n' "$line" | sed -n 's/.*\[BRIDGE_TRIGGER id=\([^ ]*\) .*/\1/p')
  [ -n "$id" ] || continue
  sleep 0.3
  printf 'ACK_TRIGGER:%s\n' "$id"
done
`

// writeAckProfile writes the agent script and an "acker" profile whose agent must
// acknowledge (submitted is not an ack); it returns the profile dir and the script path.
func writeAckProfile(t *testing.T, root string) (profileDir, agent string) {
	t.Helper()
	agent = filepath.Join(root, "agent.sh")
	if err := os.WriteFile(agent, []byte(lineAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	profileDir = t.TempDir()
	prof := map[string]any{
		"name": "acker", "launch": []string{"sh", agent, filepath.Join(root, "fresh.lines"), "ack"},
		"allowed_launchers": []string{"sh"}, "prompt_arg": "",
		"resume": []string{"sh", agent, filepath.Join(root, "resumed.lines"), "ack", "{session_id}"},
		"pack":   "shell", "submit_settle": "20ms", "queues_input": true,
		"ack_signals": []string{"marker", "api"}, "submitted_is_ack": false,
	}
	b, _ := json.Marshal(prof)
	if err := os.WriteFile(filepath.Join(profileDir, "acker.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return profileDir, agent
}

// buildChaosNudge builds the binary once per test.
func buildChaosNudge(t *testing.T) string {
	t.Helper()
	return buildWatchBinary(t)
}
