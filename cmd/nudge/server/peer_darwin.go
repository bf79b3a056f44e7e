package server

import "golang.org/x/sys/unix"

// peerPID: LOCAL_PEERPID; 0 if the kernel does not say.
func peerPID(fd int, _ *unix.Xucred) int {
	pid, err := unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	if err != nil {
		return 0
	}
	return pid
}
