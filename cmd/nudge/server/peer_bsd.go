//go:build darwin || freebsd

package server

import (
	"errors"

	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"golang.org/x/sys/unix"
)

var peerCreds peerReader = xucredPeer{}

// xucredPeer: LOCAL_PEERCRED, the peer's effective uid as of connect(2) (what
// getpeereid(3) returns), and its pid where the kernel says it (peerPID).
type xucredPeer struct{}

func (xucredPeer) peer(fd int) (auth.Peer, error) {
	c, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return auth.Peer{}, err
	}
	if c.Version != 0 { // XUCRED_VERSION
		return auth.Peer{}, errors.New("LOCAL_PEERCRED: unknown xucred version")
	}
	return auth.Peer{UID: int(c.Uid), PID: peerPID(fd, c), Known: true}, nil
}
