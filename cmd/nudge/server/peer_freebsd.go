package server

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// peerPID: the xucred's cr_pid (FreeBSD 13 and later; 0 before), the union that ends
// the struct and that x/sys leaves unexported.
func peerPID(_ int, c *unix.Xucred) int {
	const off = unsafe.Sizeof(unix.Xucred{}) - unsafe.Sizeof(uintptr(0))
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(c), off)))
}
