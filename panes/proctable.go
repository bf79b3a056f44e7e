package panes

import (
	"errors"
	"syscall"
)

// procTable is this machine's process table as procTree reads it. One per OS:
// proctable_linux.go reads /proc, proctable_darwin.go and proctable_freebsd.go the
// kernel's sysctls. hostProcs is this machine's.
type procTable interface {
	stat(pid int) (procStat, bool) // false if pid does not exist
	list() map[int]procStat        // every process, in one pass
	environ(pid int) []byte        // NUL-terminated KEY=VALUE entries; nil if unreadable
}

// procStat is what nudge reads of a process.
type procStat struct {
	ppid  int
	state byte   // R, S, D, Z, T, ... (as /proc/PID/stat says it; the BSDs' mapped to it)
	start uint64 // when it started, in the table's own unit: equal starts, same process
}

// readStat is hostProcs.stat.
func readStat(pid int) (procStat, bool) { return hostProcs.stat(pid) }

// errNoPidfd: this kernel cannot signal through a process handle (pidfdSignal).
var errNoPidfd = errors.New("no pidfd")

// signalProc sends sig to pid only if it is still the process that started at start.
// Where the kernel has pidfds (Linux 5.3 and later) the signal goes through one, which
// pins the process, so the check and the signal cannot race a reuse of the pid;
// elsewhere kill(2) right after the check (signalChecked).
func signalProc(tab procTable, pid int, start uint64, sig syscall.Signal) error {
	same := func() bool { st, ok := tab.stat(pid); return ok && st.start == start }
	if err := pidfdSignal(pid, same, sig); !errors.Is(err, errNoPidfd) {
		return err
	}
	return signalChecked(tab, pid, start, sig)
}

// signalChecked is signalProc without a pidfd: the start time is checked, then the pid
// signalled. A pid reused between the two (microseconds) is the risk left.
func signalChecked(tab procTable, pid int, start uint64, sig syscall.Signal) error {
	if st, ok := tab.stat(pid); !ok || st.start != start {
		return syscall.ESRCH
	}
	return syscall.Kill(pid, sig)
}
