package panes

import (
	"bytes"
	"encoding/binary"
)

// The decoders of the BSD tables' raw sysctl records. They are plain byte parsing, built
// on every OS so the Linux tests run them too.

// bsdState maps a BSD p_stat/ki_stat (SIDL 1, SRUN 2, SSLEEP 3, SSTOP 4, SZOMB 5, and
// FreeBSD's SWAIT 6, SLOCK 7) to the letter /proc uses.
func bsdState(s int8) byte {
	switch s {
	case 2:
		return 'R'
	case 4:
		return 'T'
	case 5:
		return 'Z'
	case 7:
		return 'D'
	}
	return 'S'
}

// bsdStart is a start time (a timeval) as one number, microseconds since the epoch.
func bsdStart(sec, usec int64) uint64 { return uint64(sec)*1_000_000 + uint64(usec) }

// procargs2Env returns the environment in a macOS KERN_PROCARGS2 buffer: a 32-bit argc,
// the executable path, NUL padding, argc NUL-terminated arguments, then the
// NUL-terminated environment (followed by the loader's own KEY=VALUE strings, which
// name nothing nudge looks for). nil if the buffer is cut short.
func procargs2Env(b []byte) []byte {
	if len(b) < 4 {
		return nil
	}
	argc := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return nil
	}
	b = bytes.TrimLeft(b[i:], "\x00")
	for ; argc > 0; argc-- {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return nil
		}
		b = b[i+1:]
	}
	if i := bytes.LastIndexByte(b, 0); i >= 0 {
		return b[:i+1]
	}
	return nil
}

// FreeBSD's struct kinfo_proc (sys/user.h) on 64-bit platforms: the offsets of the
// fields nudge reads, and the struct's size (KINFO_PROC_SIZE on amd64 and arm64).
const (
	kinfoSize     = 1088
	kinfoPID      = 72  // ki_pid
	kinfoPPID     = 76  // ki_ppid
	kinfoStartSec = 336 // ki_start.tv_sec
	kinfoStartUs  = 344 // ki_start.tv_usec
	kinfoStat     = 388 // ki_stat
)

// parseKinfo decodes a FreeBSD kern.proc.* answer: kinfo_proc records back to back,
// each starting with its size. A record of another size (a 32-bit layout) ends it.
func parseKinfo(b []byte) map[int]procStat {
	out := map[int]procStat{}
	le := binary.LittleEndian
	for len(b) >= kinfoSize && int(le.Uint32(b)) == kinfoSize {
		pid := int(int32(le.Uint32(b[kinfoPID:])))
		out[pid] = procStat{
			ppid:  int(int32(le.Uint32(b[kinfoPPID:]))),
			state: bsdState(int8(b[kinfoStat])),
			start: bsdStart(int64(le.Uint64(b[kinfoStartSec:])), int64(le.Uint64(b[kinfoStartUs:]))),
		}
		b = b[kinfoSize:]
	}
	return out
}
