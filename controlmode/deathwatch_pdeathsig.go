//go:build linux || freebsd

package controlmode

import (
	"os/exec"
	"syscall"
)

var hostWatch parentWatch = pdeathsig{}

// pdeathsig: the kernel sends the client SIGTERM when nudge dies (prctl
// PR_SET_PDEATHSIG on Linux, procctl PROC_PDEATHSIG_CTL on FreeBSD).
type pdeathsig struct{}

func (pdeathsig) prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
}

func (pdeathsig) watch(*exec.Cmd) func() { return func() {} }
