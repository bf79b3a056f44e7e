package store

import "golang.org/x/sys/unix"

// releaseMapped drops the page-table entries of size bytes of bbolt's mapping at data.
// The mapping is MAP_SHARED and read-only: MADV_DONTNEED loses nothing (the data is the
// file's, in the page cache), and the next read faults the page in again.
func releaseMapped(data uintptr, size int64) {
	if data == 0 || size <= 0 {
		return
	}
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, data, uintptr(size), unix.MADV_DONTNEED)
}
