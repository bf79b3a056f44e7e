package native

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCodexDialsCheckedSocket: the socket path is a link (as Codex makes it); flipped to
// another socket after the check (another user's, say), the prompt still goes to the
// socket that was checked, and the other one sees no connection.
func TestCodexDialsCheckedSocket(t *testing.T) {
	homeA, homeB, home := t.TempDir(), t.TempDir(), t.TempDir()
	gotA, gotB := make(chan map[string]any, 16), make(chan map[string]any, 16)
	fakeCodex(t, homeA, gotA)
	fakeCodex(t, homeB, gotB)
	link := Codex{Home: home}.Socket()
	os.MkdirAll(filepath.Dir(link), 0o700)
	if err := os.Symlink(Codex{Home: homeA}.Socket(), link); err != nil {
		t.Fatal(err)
	}
	checked = func(string) {
		os.Remove(link)
		if err := os.Symlink(Codex{Home: homeB}.Socket(), link); err != nil {
			t.Error(err)
		}
	}
	defer func() { checked = func(string) {} }()
	if _, err := (Codex{Home: home}).Queue(context.Background(), "thread-1", fakeCwd, "secret prompt"); err != nil {
		t.Fatal(err)
	}
	if len(gotB) > 0 {
		t.Fatalf("the socket the link was flipped to got %v", <-gotB)
	}
	if len(gotA) == 0 {
		t.Fatal("the checked socket got nothing")
	}
}

// TestCodexSockRefused: a socket in a directory others may write to, a socket
// others may connect to, or one (or its directory) owned by another user is not dialed.
func TestCodexSockRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		root bool // needs to chown
		set  func(dir, sock string) error
	}{
		{"DirGW", false, func(dir, _ string) error { return os.Chmod(dir, 0o770) }},
		{"DirOW", false, func(dir, _ string) error { return os.Chmod(dir, 0o707) }},
		{"SockOW", false, func(dir, sock string) error {
			if err := os.Chmod(dir, 0o755); err != nil {
				return err
			}
			return os.Chmod(sock, 0o777)
		}},
		{"SockUID", true, func(_, sock string) error { return os.Lchown(sock, 4242, 4242) }},
		{"DirUID", true, func(dir, _ string) error { return os.Chown(dir, 4242, 4242) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Geteuid() != 0 {
				t.Skip("chown to another uid needs root")
			}
			home := t.TempDir()
			got := make(chan map[string]any, 16)
			fakeCodex(t, home, got)
			c := Codex{Home: home}
			if err := tc.set(filepath.Dir(c.Socket()), c.Socket()); err != nil {
				t.Fatal(err)
			}
			_, err := c.Queue(context.Background(), "thread-1", fakeCwd, "secret prompt")
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "not to this user") && !strings.Contains(err.Error(), "writable by others") {
				t.Fatalf("err %v", err)
			}
			if len(got) > 0 {
				t.Fatalf("the socket got %v", <-got)
			}
		})
	}
}

// TestCodexSocketSameUser: the socket of this user's Codex, mode as a umask of 002 makes
// it (group-writable) in a private directory, is dialed.
func TestCodexSocketSameUser(t *testing.T) {
	home := t.TempDir()
	fakeCodex(t, home, make(chan map[string]any, 16))
	c := Codex{Home: home}
	os.Chmod(c.Socket(), 0o775)
	if _, err := c.Queue(context.Background(), "thread-1", fakeCwd, "x"); err != nil {
		t.Fatal(err)
	}
}
