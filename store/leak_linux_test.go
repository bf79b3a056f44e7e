package store

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The descriptor search macOS and the BSDs use (fstat, no /proc) finds what the /proc
// one finds: every descriptor open on the file, and nothing else.
func TestStatFinderFindsTheFilesDescriptors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nudge.db")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	var want []int
	for range 3 {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		want = append(want, int(f.Fd()))
	}
	other, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	abs, _ := filepath.Abs(path)
	byStat, byProc := statFinder{}.fds(abs), procFinder{}.fds(abs)
	slices.Sort(want)
	if !slices.Equal(byStat, want) || !slices.Equal(byProc, want) {
		t.Fatalf("descriptors of %s: by fstat %v, by /proc %v, want %v", path, byStat, byProc, want)
	}
}
