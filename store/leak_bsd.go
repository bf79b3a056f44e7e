//go:build unix && !linux

package store

import (
	"syscall"

	"golang.org/x/sys/unix"
)

var leaked leakFinder = statFinder{}

// replaceFD makes fd a close-on-exec copy of null; the fork lock keeps a concurrent
// exec from inheriting it between the two steps (macOS has no dup3).
func replaceFD(null, fd int) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if unix.Dup2(null, fd) == nil {
		unix.CloseOnExec(fd)
	}
}
