package panes

import (
	"syscall"

	"golang.org/x/sys/unix"
)

var hostProcs procTable = freebsdProcs{}

// freebsdProcs is FreeBSD's process table: sysctl kern.proc.proc / kern.proc.pid
// (struct kinfo_proc, parseKinfo) and kern.proc.env (the caller's own processes only,
// as /proc/PID/environ on Linux). procfs is not mounted by default there.
type freebsdProcs struct{}

func (freebsdProcs) stat(pid int) (procStat, bool) {
	if pid <= 0 {
		return procStat{}, false
	}
	b, err := unix.SysctlRaw("kern.proc.pid", pid)
	if err != nil {
		return procStat{}, false
	}
	st, ok := parseKinfo(b)[pid]
	return st, ok
}

func (freebsdProcs) list() map[int]procStat {
	b, err := unix.SysctlRaw("kern.proc.proc")
	if err != nil {
		return map[int]procStat{}
	}
	return parseKinfo(b)
}

func (freebsdProcs) environ(pid int) []byte {
	b, err := unix.SysctlRaw("kern.proc.env", pid)
	if err != nil || len(b) == 0 {
		return nil
	}
	if b[len(b)-1] != 0 {
		b = append(b, 0)
	}
	return b
}

// pidfdSignal: FreeBSD's process descriptors (pdfork) only come from creating the
// process, never from a pid.
func pidfdSignal(int, func() bool, syscall.Signal) error { return errNoPidfd }
