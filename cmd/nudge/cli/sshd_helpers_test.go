package cli

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sshHost is a real OpenSSH server on a free port of 127.0.0.1, started by the test with
// its own config, a throwaway host key and a throwaway client key; nudge reaches it
// through an ssh config file naming it by a Host alias. Its logins run tmux on this
// machine, but with TMUX_TMPDIR set by the client config (AcceptEnv), so the "remote"
// tmux server is another server than the local one even with the same -L name.
type sshHost struct {
	t        *testing.T
	dir      string
	port     int
	alias    string
	sshd     *exec.Cmd
	config   string // the ssh client config file (ssh -F)
	sshdConf string
	tmuxDir  string // TMUX_TMPDIR of the remote logins
}

// startSSHHost starts sshd, or skips the test if there is none (.ci/test installs
// openssh-server). Everything lives in a temp dir and the sshd is killed by pid.
func startSSHHost(t *testing.T) *sshHost {
	t.Helper()
	sshdBin := "/usr/sbin/sshd"
	if _, err := os.Stat(sshdBin); err != nil {
		t.Skipf("no sshd (%v): install openssh-server to run the multi-host tests", err)
	}
	for _, bin := range []string{"ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("no %s: install openssh-client to run the multi-host tests", bin)
		}
	}
	// Short: the remote tmux socket lives under it (a unix socket path has ~100 bytes).
	dir, err := os.MkdirTemp("", "nsh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"host_key", "id"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "nudge-test",
			"-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "id.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		t.Fatal(err)
	}
	// sshd wants its privilege separation directory (the package's tmpfiles.d makes it
	// on a booted system; a container has none).
	if _, err := os.Stat("/run/sshd"); os.IsNotExist(err) {
		os.MkdirAll("/run/sshd", 0o755) //nolint:errcheck // sshd says so if it is still missing
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	h := &sshHost{t: t, dir: dir, alias: "nudge-remote", tmuxDir: filepath.Join(dir, "rt"),
		config: filepath.Join(dir, "ssh_config"), sshdConf: filepath.Join(dir, "sshd_config")}
	if err := os.Mkdir(h.tmuxDir, 0o700); err != nil {
		t.Fatal(err)
	}
	h.port = freePort(t)
	sshdConf := fmt.Sprintf(`ListenAddress 127.0.0.1
Port %d
HostKey %s
AuthorizedKeysFile %s
PidFile %s
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
AcceptEnv TMUX_TMPDIR
MaxStartups 100:30:200
MaxSessions 100
LogLevel ERROR
`, h.port, filepath.Join(dir, "host_key"), filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd.pid"))
	if err := os.WriteFile(h.sshdConf, []byte(sshdConf), 0o600); err != nil {
		t.Fatal(err)
	}
	clientConf := fmt.Sprintf(`Host %s
  HostName 127.0.0.1
  Port %d
  User %s
  IdentityFile %s
  IdentitiesOnly yes
  UserKnownHostsFile %s
  StrictHostKeyChecking accept-new
  BatchMode yes
  ConnectTimeout 5
  SetEnv TMUX_TMPDIR=%s
  LogLevel ERROR
`, h.alias, h.port, u.Username, filepath.Join(dir, "id"), filepath.Join(dir, "known_hosts"), h.tmuxDir)
	if err := os.WriteFile(h.config, []byte(clientConf), 0o600); err != nil {
		t.Fatal(err)
	}
	h.start()
	t.Cleanup(h.stop)
	// The first login records the host key (accept-new) and proves the setup.
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, err := exec.Command("ssh", "-F", h.config, "-T", "--", h.alias, "echo ok").CombinedOutput()
		if err == nil && strings.TrimSpace(string(out)) == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh to the test sshd: %v: %s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return h
}

// start runs sshd in the foreground (-D) on the same port and config.
func (h *sshHost) start() {
	h.t.Helper()
	cmd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", h.sshdConf)
	if os.Getenv("NUDGE_TEST_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("sshd: %v", err)
	}
	h.sshd = cmd
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(h.port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("sshd never listened on port %d: %v", h.port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop kills the listening sshd by pid (established sessions live on in their own sshd
// processes until their client ends).
func (h *sshHost) stop() {
	if h.sshd == nil {
		return
	}
	h.sshd.Process.Kill()
	h.sshd.Wait() //nolint:errcheck // killed on purpose
	h.sshd = nil
}

// tmux runs a tmux command on the "remote" server directly (same machine, its
// TMUX_TMPDIR), for the test's own checks.
func (h *sshHost) tmux(socket string, args ...string) string {
	h.t.Helper()
	out, err := h.tmuxCmd(socket, args...).CombinedOutput()
	if err != nil {
		h.t.Fatalf("remote tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

func (h *sshHost) tmuxCmd(socket string, args ...string) *exec.Cmd {
	cmd := exec.Command("tmux", append([]string{"-L", socket}, args...)...)
	cmd.Env = append(os.Environ(), "TMUX_TMPDIR="+h.tmuxDir)
	return cmd
}

// killServer ends the remote tmux server of socket, if any.
func (h *sshHost) killServer(socket string) {
	h.tmuxCmd(socket, "kill-server").Run() //nolint:errcheck // none is fine
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// killPid kills one process by pid.
func killPid(t *testing.T, pid int) {
	t.Helper()
	if pid <= 0 {
		t.Fatal("no pid to kill")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
}
