//go:build darwin || freebsd

package native

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerIsMe fails unless the process at the other end of c (LOCAL_PEERCRED, as of its
// listen) runs as this process's user.
func peerIsMe(c net.Conn) error {
	return peerUID(c, func(fd int) (int, error) {
		cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if err != nil {
			return 0, err
		}
		return int(cred.Uid), nil
	})
}
