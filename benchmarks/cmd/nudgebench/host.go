package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nudgehq/nudge/benchmarks/internal/panereader"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/inject"
)

// The host phase: a workspace bound to an ssh host beside a local one, in the same
// daemon. The "host" is this machine through a throwaway sshd on 127.0.0.1 (its own
// keys and config, TMUX_TMPDIR set per login so its tmux server is another server), so
// the pane readers still reach the harness and share its clock: the figures are
// loopback ssh, the cost of the transport without a network's round trip.

const remoteWorkspace = "benchr"

// loopSSHD is a private sshd on a free loopback port and the client config reaching it.
type loopSSHD struct {
	dir, config, alias, tmuxDir string
	cmd                         *exec.Cmd
}

// startLoopSSHD starts a private sshd on a free loopback port, with its own keys and
// configuration in a temporary folder, and returns once a login through it works.
// The caller calls close.
func startLoopSSHD() (s *loopSSHD, err error) {
	sshd := "/usr/sbin/sshd"
	if _, err := os.Stat(sshd); err != nil {
		return nil, fmt.Errorf("host phase needs OpenSSH's sshd (openssh-server): %w", err)
	}
	s = &loopSSHD{alias: "nudgebench-host"}
	if s.dir, err = os.MkdirTemp("", "nbh"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err := s.makeKeys(); err != nil {
		return nil, err
	}
	if _, err := os.Stat("/run/sshd"); os.IsNotExist(err) {
		os.MkdirAll("/run/sshd", 0o755) // sshd's privilege separation directory
	}
	u, err := user.Current()
	if err != nil {
		return nil, err
	}
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	s.tmuxDir = s.path("rt")
	if err := os.Mkdir(s.tmuxDir, 0o700); err != nil {
		return nil, err
	}
	if err := s.writeServerConfig(port); err != nil {
		return nil, err
	}
	if err := s.writeClientConfig(port, u.Username); err != nil {
		return nil, err
	}
	s.cmd = exec.Command(sshd, "-D", "-e", "-f", s.path("sshd_config"))
	s.cmd.SysProcAttr = dieWithHarness()
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	if err := s.awaitLogin(); err != nil {
		return nil, err
	}
	return s, nil
}

// path is name in the sshd's folder.
func (s *loopSSHD) path(name string) string { return filepath.Join(s.dir, name) }

// makeKeys makes the host key and the client key, and authorizes the client key.
func (s *loopSSHD) makeKeys() error {
	for _, k := range []string{"host_key", "id"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", s.path(k)).CombinedOutput(); err != nil {
			return fmt.Errorf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub, err := os.ReadFile(s.path("id.pub"))
	if err != nil {
		return err
	}
	return os.WriteFile(s.path("authorized_keys"), pub, 0o600)
}

// freeLoopbackPort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeServerConfig writes sshd_config: listen on port, keys only, and accept the
// client's TMUX_TMPDIR so each login reaches the host's own tmux server.
func (s *loopSSHD) writeServerConfig(port int) error {
	conf := fmt.Sprintf("ListenAddress 127.0.0.1\nPort %d\nHostKey %s\nAuthorizedKeysFile %s\nPidFile %s\n"+
		"UsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"+
		"KbdInteractiveAuthentication no\nAcceptEnv TMUX_TMPDIR\nMaxStartups 200\nMaxSessions 200\nLogLevel ERROR\n",
		port, s.path("host_key"), s.path("authorized_keys"), s.path("sshd.pid"))
	return os.WriteFile(s.path("sshd_config"), []byte(conf), 0o600)
}

// writeClientConfig writes the ssh_config that reaches the sshd as s.alias, logging in
// as username with the client key and sending the host's TMUX_TMPDIR.
func (s *loopSSHD) writeClientConfig(port int, username string) error {
	s.config = s.path("ssh_config")
	client := fmt.Sprintf("Host %s\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n"+
		"  UserKnownHostsFile %s\n  StrictHostKeyChecking accept-new\n  BatchMode yes\n  SetEnv TMUX_TMPDIR=%s\n  LogLevel ERROR\n",
		s.alias, port, username, s.path("id"), s.path("known_hosts"), s.tmuxDir)
	return os.WriteFile(s.config, []byte(client), 0o600)
}

// awaitLogin retries `ssh HOST echo ok` until it answers, for up to 15 s.
func (s *loopSSHD) awaitLogin() error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, err := exec.Command("ssh", "-F", s.config, "-T", "--", s.alias, "echo ok").CombinedOutput()
		if err == nil && strings.TrimSpace(string(out)) == "ok" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ssh to the loopback sshd: %v: %s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// run runs argv on the host through ssh, as nudge does.
func (s *loopSSHD) run(argv ...string) error {
	a := controlmode.SSHArgv("ssh", s.config, s.alias, argv)
	if out, err := exec.Command(a[0], a[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %v: %s", argv, err, out)
	}
	return nil
}

func (s *loopSSHD) close() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
	}
	os.RemoveAll(s.dir)
}

// hostResult is the host phase's samples, in ns.
type hostResult struct {
	localRead, localEnter   []int64 // nudge, local workspace: request → text read; → Enter read
	remoteRead, remoteEnter []int64 // nudge, ssh workspace
	sshRead, sshDone        []int64 // `ssh host tmux send-keys` children: fork → text read; both exited
	sshRTT                  []int64 // `ssh host true`: a fresh connection's cost (no ControlMaster)
}

// hostLatency alternates triggers between a local pane and a pane of a workspace on the
// loopback ssh host, and the same text typed through `ssh HOST tmux send-keys` children.
func (b *bench) hostLatency(s *loopSSHD, n, warmup int) (*hostResult, error) {
	e := b.e
	// The remote tmux server, with the same default size as the local one.
	base := []string{e.tmux, "-L", e.tmuxSock, "-f", os.DevNull}
	if err := s.run(append(base, "new-session", "-d", "-s", "nbhold", "-x", strconv.Itoa(b.o.width), "-y", "50", "sleep", "1000000")...); err != nil {
		return nil, err
	}
	defer func() {
		k := exec.Command(e.tmux, "-L", e.tmuxSock, "kill-server")
		k.Env = append(os.Environ(), "TMUX_TMPDIR="+s.tmuxDir)
		k.Run()
	}()
	if err := s.run(append(base, "set-option", "-g", "default-size", fmt.Sprintf("%dx50", b.o.width))...); err != nil {
		return nil, err
	}
	if err := b.grow(1); err != nil {
		return nil, err
	}
	local := b.panes[0]
	remote, err := e.spawnOn(remoteWorkspace, "h0", "bench", s.alias)
	if err != nil {
		return nil, fmt.Errorf("spawn on the ssh host: %w", err)
	}
	raw, err := dialRaw(e.apiSock)
	if err != nil {
		return nil, err
	}
	defer raw.close()
	b.raw = raw
	res := &hostResult{}
	scratch := &triggerResult{}
	for k := 0; k < warmup+n; k++ {
		keep := k >= warmup
		for step := 0; step < 3; step++ {
			var err error
			switch (k + step) % 3 {
			case 0:
				scratch.nudgeRead, scratch.nudgeEnter = nil, nil
				if err = b.nudgeSample(local, scratch, true); err == nil && keep {
					res.localRead = append(res.localRead, scratch.nudgeRead...)
					res.localEnter = append(res.localEnter, scratch.nudgeEnter...)
				}
			case 1:
				scratch.nudgeRead, scratch.nudgeEnter = nil, nil
				if err = b.nudgeSample(remote, scratch, true); err == nil && keep {
					res.remoteRead = append(res.remoteRead, scratch.nudgeRead...)
					res.remoteEnter = append(res.remoteEnter, scratch.nudgeEnter...)
				}
			default:
				err = b.sshSample(s, remote, res, keep)
			}
			if err != nil {
				return nil, err
			}
		}
		if keep && k%4 == 0 {
			t0 := panereader.Mono()
			if err := s.run("true"); err != nil {
				return nil, err
			}
			res.sshRTT = append(res.sshRTT, panereader.Mono()-t0)
		}
	}
	return res, nil
}

// sshSample types the envelope with two `ssh HOST tmux send-keys` children (text, then
// Enter), as a script driving a remote tmux without a persistent connection does.
func (b *bench) sshSample(s *loopSSHD, p *bpane, res *hostResult, keep bool) error {
	if err := b.waitLane(p, &triggerResult{}); err != nil {
		return err
	}
	time.Sleep(b.o.gap)
	marker, body := b.nextPrompt()
	text := inject.Envelope{ID: fmt.Sprintf("nb%d", b.seq), Reason: "trigger", AckHint: true}.Wrap(body)
	base := []string{b.e.tmux, "-L", b.e.tmuxSock, "send-keys", "-t", p.rt.PaneID}
	t0 := panereader.Mono()
	if err := s.run(append(base, "-l", "--", text)...); err != nil {
		return err
	}
	if err := s.run(append(base, "-H", "0d")...); err != nil {
		return err
	}
	tDone := panereader.Mono()
	m, err := p.r.Await("m", marker, 10*time.Second)
	if err != nil {
		return fmt.Errorf("ssh send-keys: %w", err)
	}
	if _, err := p.r.Await("enter", "", 10*time.Second); err != nil {
		return fmt.Errorf("ssh send-keys: %w", err)
	}
	if keep {
		res.sshRead = append(res.sshRead, m.TS-t0)
		res.sshDone = append(res.sshDone, tDone-t0)
	}
	return nil
}

// spawnOn starts a managed runtime running the reader in workspace ws, bound to host
// ("" = local), and waits for the reader and for the runtime to be ready.
func (e *env) spawnOn(ws, role, agent, host string) (*bpane, error) {
	return e.spawnArgv(ws, role, agent, host, []string{e.self, "-pane-reader", e.readerSock, role})
}

// spawnArgv is spawnOn with the pane's argv given: it must start the reader as role, or
// be nil for the profile's own program (then the pane has no reader: bpane.r is nil).
func (e *env) spawnArgv(ws, role, agent, host string, argv []string) (*bpane, error) {
	req := map[string]any{"workspace": ws, "role": role, "agent": agent, "dir": e.dir, "host": host}
	if argv != nil {
		req["argv"] = argv
	}
	b, err := e.post("/v1/runtimes", req)
	if err != nil {
		return nil, err
	}
	var rt rtRecord
	if err := json.Unmarshal(b, &rt); err != nil {
		return nil, err
	}
	var r *panereader.Pane
	if argv != nil {
		if r, err = e.readers.Wait(role, 30*time.Second); err != nil {
			return nil, err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for rt.Status != "ready" || rt.PaneID == "" {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("runtime %s: status %q after 30s", rt.RuntimeID, rt.Status)
		}
		time.Sleep(50 * time.Millisecond)
		b, err := e.get("/v1/runtimes/" + rt.RuntimeID)
		if err != nil {
			return nil, err
		}
		rt = rtRecord{}
		if err := json.Unmarshal(b, &rt); err != nil {
			return nil, err
		}
	}
	return &bpane{rt: rt, r: r, ws: ws}, nil
}

func (h *hostResult) print(w io.Writer) {
	fmt.Fprintln(w, "Workspace on an ssh host (loopback sshd, no network) beside a local one, same daemon, µs")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| path | n | p50 | p95 | p99 | max |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	row(w, "nudge, local workspace: request → pane read text", h.localRead)
	row(w, "nudge, ssh workspace: request → pane read text", h.remoteRead)
	row(w, "nudge, local workspace: request → pane read Enter", h.localEnter)
	row(w, "nudge, ssh workspace: request → pane read Enter", h.remoteEnter)
	row(w, "`ssh HOST tmux send-keys` children: fork → pane read text", h.sshRead)
	row(w, "`ssh HOST tmux send-keys` children: both exited", h.sshDone)
	row(w, "`ssh HOST true` (a new ssh connection)", h.sshRTT)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "ssh/local, text read: p50 %.2fx, p99 %.2fx; ssh children/nudge over ssh, text read: p50 %.1fx, p99 %.1fx\n\n",
		pct(h.remoteRead, .5)/pct(h.localRead, .5), pct(h.remoteRead, .99)/pct(h.localRead, .99),
		pct(h.sshRead, .5)/pct(h.remoteRead, .5), pct(h.sshRead, .99)/pct(h.remoteRead, .99))
}
