package native

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerIsMe fails unless the process at the other end of c (SO_PEERCRED, as of its
// listen) runs as this process's user.
func peerIsMe(c net.Conn) error {
	return peerUID(c, func(fd int) (int, error) {
		cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			return 0, err
		}
		return int(cred.Uid), nil
	})
}
