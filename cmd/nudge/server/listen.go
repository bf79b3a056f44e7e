package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/auth"
)

// Listen creates the API socket: its directory 0700, a stale socket file (and only a
// socket) removed, the socket itself 0600.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("socket dir: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket: refusing to remove it", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("another daemon is serving on %s", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod socket: %w", err)
	}
	return ln, nil
}

type peerKey struct{}

// connContext stores the peer credentials of a unix connection in the request context.
func connContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var p auth.Peer
	var perr error
	if err := raw.Control(func(fd uintptr) { p, perr = peerCreds.peer(int(fd)) }); err != nil || perr != nil {
		return ctx
	}
	return WithPeer(ctx, p)
}

// peerReader reads who is on the other end of a connected unix socket: peer_linux.go
// (SO_PEERCRED), peer_bsd.go (LOCAL_PEERCRED on macOS and FreeBSD).
type peerReader interface {
	peer(fd int) (auth.Peer, error)
}

// WithPeer returns ctx carrying the connection's peer (the server does this for every
// unix connection; tests of the handler do it themselves).
func WithPeer(ctx context.Context, p auth.Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

func peerOf(ctx context.Context) auth.Peer {
	p, _ := ctx.Value(peerKey{}).(auth.Peer)
	return p
}
