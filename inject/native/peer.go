//go:build unix

package native

import (
	"fmt"
	"net"
	"os"
)

// peerUID runs get on c's descriptor and checks the uid it gives.
func peerUID(c net.Conn, get func(fd int) (int, error)) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("not a unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var uid int
	var gerr error
	if err := raw.Control(func(fd uintptr) { uid, gerr = get(int(fd)) }); err != nil {
		return err
	}
	if gerr != nil {
		return fmt.Errorf("peer credentials: %w", gerr)
	}
	if uid != os.Geteuid() {
		return fmt.Errorf("the socket's listener runs as uid %d, not as this user", uid)
	}
	return nil
}

// PeerIsMe checks that the process at the other end of the unix socket c runs as this
// process's uid (peer credentials on Linux, macOS and FreeBSD; elsewhere nil).
func PeerIsMe(c net.Conn) error { return peerIsMe(c) }
