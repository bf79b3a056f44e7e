package panes

import (
	"syscall"

	"golang.org/x/sys/unix"
)

var hostProcs procTable = darwinProcs{}

// darwinProcs is macOS's process table: sysctl kern.proc.all / kern.proc.pid (struct
// kinfo_proc) and kern.procargs2 for environments (the caller's own processes only, as
// /proc/PID/environ on Linux).
type darwinProcs struct{}

func darwinStat(k *unix.KinfoProc) procStat {
	return procStat{
		ppid:  int(k.Eproc.Ppid),
		state: bsdState(k.Proc.P_stat),
		start: bsdStart(int64(k.Proc.P_starttime.Sec), int64(k.Proc.P_starttime.Usec)),
	}
}

func (darwinProcs) stat(pid int) (procStat, bool) {
	if pid <= 0 {
		return procStat{}, false
	}
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || int(k.Proc.P_pid) != pid {
		return procStat{}, false
	}
	return darwinStat(k), true
}

func (darwinProcs) list() map[int]procStat {
	out := map[int]procStat{}
	ks, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return out
	}
	for i := range ks {
		out[int(ks[i].Proc.P_pid)] = darwinStat(&ks[i])
	}
	return out
}

func (darwinProcs) environ(pid int) []byte {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return nil
	}
	return procargs2Env(b)
}

// pidfdSignal: macOS has no pidfds.
func pidfdSignal(int, func() bool, syscall.Signal) error { return errNoPidfd }
