package server

import (
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"golang.org/x/sys/unix"
)

var peerCreds peerReader = ucredPeer{}

// ucredPeer: SO_PEERCRED, the peer's uid and pid as of connect(2).
type ucredPeer struct{}

func (ucredPeer) peer(fd int) (auth.Peer, error) {
	c, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return auth.Peer{}, err
	}
	return auth.Peer{UID: int(c.Uid), PID: int(c.Pid), Known: true}, nil
}
