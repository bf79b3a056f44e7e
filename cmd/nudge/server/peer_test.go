package server

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// A real unix-socket connection carries its peer's uid (and pid where the kernel says
// it) into the request context, through this OS's peerReader.
func TestConnContextPeer(t *testing.T) {
	ln, err := Listen(filepath.Join(t.TempDir(), "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer server.Close()
	p := peerOf(connContext(context.Background(), server))
	if !p.Known || p.UID != os.Getuid() {
		t.Fatalf("peer %+v, want uid %d known", p, os.Getuid())
	}
	if p.PID != 0 && p.PID != os.Getpid() {
		t.Fatalf("peer pid %d, want %d", p.PID, os.Getpid())
	}
}
