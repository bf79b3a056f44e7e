package store

import "golang.org/x/sys/unix"

var releaser pageReleaser = madviseRelease{}

// madviseRelease: the mapping is MAP_SHARED and read-only, so MADV_DONTNEED loses
// nothing (the data is the file's, in the page cache), and the next read faults the
// page in again.
type madviseRelease struct{}

func (madviseRelease) release(_ string, data uintptr, size int64) {
	if data == 0 || size <= 0 {
		return
	}
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, data, uintptr(size), unix.MADV_DONTNEED)
}
