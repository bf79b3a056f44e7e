//go:build unix

package store

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// remapRelease maps the file again over the same addresses (MAP_FIXED, read-only,
// shared, from offset 0), which replaces the old mapping's pages in one step: readers
// see the same bytes (both map the file's page cache; bbolt writes through the file,
// never the mapping) and the new range starts with nothing resident. The range is
// whole pages within what the mapping covers; the caller holds a read transaction, so
// bbolt does not move the mapping meanwhile. Used where madvise cannot drop the pages of
// a shared file mapping (macOS, the BSDs); a Linux test runs it too.
type remapRelease struct{}

func (remapRelease) release(path string, data uintptr, size int64) {
	size -= size % int64(os.Getpagesize())
	if data == 0 || size <= 0 {
		return
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd) //nolint:errcheck // read-only
	// The mapping outlives fd (it holds the file itself), as bbolt's own does.
	addr := *(*unsafe.Pointer)(unsafe.Pointer(&data)) // bbolt's mapping, outside the Go heap
	if _, err := unix.MmapPtr(fd, 0, addr, uintptr(size), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED); err == nil {
		// The advice bbolt gave its mapping (no read-ahead) goes with the old pages.
		_ = unix.Madvise(unsafe.Slice((*byte)(addr), size), unix.MADV_RANDOM)
	}
}
