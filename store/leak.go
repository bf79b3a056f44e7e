package store

import (
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// closeLeaked releases what a panicking bolt.Open left behind for path: its descriptor
// and its mapping, which hold the file's lock (every later Open in this process would
// be refused as locked). The descriptor is replaced by /dev/null rather than closed:
// bbolt's abandoned *os.File still owns the number and its finalizer will close it.
// No other descriptor of the file can be open here: bbolt panics only after taking the
// lock. How the descriptors and the mapping are found is the OS's (leaked, below).
func closeLeaked(path string) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return
	}
	leaked.unmap(abs)
	null, err := syscall.Open(os.DevNull, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer syscall.Close(null)
	for _, fd := range leaked.fds(abs) {
		replaceFD(null, fd)
	}
}

// leakFinder finds this process's hold on a file: leak_linux.go reads /proc/self;
// elsewhere (leak_bsd.go) the descriptors are found by fstat and the mapping is left.
type leakFinder interface {
	fds(abs string) []int // the descriptors open on the file
	unmap(abs string)     // unmaps every mapping of the file (best effort)
}

// statFinder finds descriptors by comparing each open one's device and inode with the
// file's: it needs no /proc, so it serves the BSDs and macOS, and a Linux test runs it
// beside the /proc one. It leaves mappings alone: on the BSDs and macOS a mapping holds
// the file's vnode, not the open file a flock(2) lock belongs to, so replacing the
// descriptor releases the lock; the mapping's address range stays until exit.
type statFinder struct{}

func (statFinder) fds(abs string) []int {
	var want unix.Stat_t
	if unix.Stat(abs, &want) != nil {
		return nil
	}
	limit, lim := 4096, unix.Rlimit{}
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		limit = int(min(lim.Cur, 1<<16))
	}
	var out []int
	for fd := 0; fd < limit; fd++ {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Dev == want.Dev && st.Ino == want.Ino {
			out = append(out, fd)
		}
	}
	return out
}

func (statFinder) unmap(string) {}
