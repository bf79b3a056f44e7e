package store

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

var leaked leakFinder = procFinder{}

// procFinder reads /proc/self/maps and /proc/self/fd. On Linux a mapping holds the open
// file and with it the flock(2) lock, so the mapping must go too.
type procFinder struct{}

func (procFinder) fds(abs string) []int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == abs {
			if fd, err := strconv.Atoi(e.Name()); err == nil {
				out = append(out, fd)
			}
		}
	}
	return out
}

func (procFinder) unmap(abs string) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	for _, l := range strings.Split(string(maps), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || f[len(f)-1] != abs {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if ok && err1 == nil && err2 == nil && end > start {
			unix.Syscall(unix.SYS_MUNMAP, uintptr(start), uintptr(end-start), 0) //nolint:errcheck // best effort
		}
	}
}

// replaceFD makes fd a close-on-exec copy of null in one step.
func replaceFD(null, fd int) {
	unix.Dup3(null, fd, unix.O_CLOEXEC) //nolint:errcheck // best effort
}
