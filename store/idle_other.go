//go:build !linux

package store

// releaseMapped is a no-op where MADV_DONTNEED's semantics on a shared file mapping are
// not the ones relied on here.
func releaseMapped(data uintptr, size int64) {}
