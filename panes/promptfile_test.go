package panes

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReadRegularFileRefusesSwaps: a prompt file swapped after its check for a FIFO, a
// symlink or a device is refused at once, never waited on or read past its bound.
func TestReadRegularFileRefusesSwaps(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("/etc/hostname", link); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 3000), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, link, zero} {
		done := make(chan error, 1)
		go func() { _, err := readRegularFile(path, 1024); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s: read, want refused", filepath.Base(path))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the read never returned", filepath.Base(path))
		}
	}
	b, err := readRegularFile(big, 1024)
	if err != nil || len(b) != 1025 {
		t.Errorf("big: got %d bytes, %v; want 1025 (the bound plus one, to tell it is over)", len(b), err)
	}
}
