package controlmode

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// parentWatch keeps the control client from outliving nudge. A tmux 3.3a control client
// whose parent is killed right after starting it (before the server reads its stdin)
// misses the EOF and stays attached forever, unread: its output backlog grows in the
// server and the pane keeps a client that will never consume it. SIGTERM ends the client
// process, which the server always notices. hostWatch is this OS's: the kernel's
// parent-death signal on Linux and FreeBSD (deathwatch_pdeathsig.go), pipeWatch
// elsewhere (macOS).
type parentWatch interface {
	prepare(cmd *exec.Cmd)      // before cmd.Start
	watch(cmd *exec.Cmd) func() // after it; the func ends the watch once cmd is reaped
}

// pipeWatch is the parent-death watch without kernel help: a small shell started beside
// the client reads a pipe whose only writer is nudge, and nudge never writes. When nudge
// dies, however it dies, the kernel closes the pipe: the read ends and the shell sends
// the client SIGTERM. When the client ends first, nudge stops the shell (after reaping
// the client, and before closing its end, so the shell never signals a reused pid while
// nudge lives). Its own process group: a terminal's ^C meant for nudge leaves it be.
type pipeWatch struct{}

func (pipeWatch) prepare(*exec.Cmd) {}

func (pipeWatch) watch(cmd *exec.Cmd) func() {
	w := startPipeWatch(cmd.Process.Pid)
	if w == nil {
		return func() {}
	}
	return w.stop
}

// pipeWatcher is one running watch: the shell and nudge's end of its pipe.
type pipeWatcher struct {
	sh *exec.Cmd
	w  *os.File
}

func startPipeWatch(pid int) *pipeWatcher {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	sh := exec.Command("/bin/sh", "-c", `read -r _; kill -TERM "$1" 2>/dev/null`, "nudge-watch", strconv.Itoa(pid))
	sh.Stdin = r
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = sh.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil
	}
	return &pipeWatcher{sh: sh, w: w}
}

func (p *pipeWatcher) stop() {
	_ = p.sh.Process.Kill()
	_ = p.sh.Wait()
	p.w.Close()
}
