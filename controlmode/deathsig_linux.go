package controlmode

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel send the control client SIGTERM when nudge dies. A
// tmux 3.3a control client whose parent is killed right after starting it (before the
// server reads its stdin) misses the EOF and stays attached forever, unread: its output
// backlog grows in the server and the pane keeps a client that will never consume it.
// SIGTERM ends the client process, which the server always notices.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
}
