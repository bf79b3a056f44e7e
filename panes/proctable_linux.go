package panes

import (
	"errors"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

var hostProcs procTable = procfs{}

// procfs is Linux's /proc: /proc/PID/stat (start in clock ticks after boot) and
// /proc/PID/environ.
type procfs struct{}

func (procfs) stat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	return parseStat(b)
}

func (p procfs) list() map[int]procStat {
	out := map[int]procStat{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if st, ok := p.stat(pid); ok {
				out[pid] = st
			}
		}
	}
	return out
}

func (procfs) environ(pid int) []byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil
	}
	return b
}

// pidfdSignal signals pid through a pidfd when same still holds with the pidfd open.
func pidfdSignal(pid int, same func() bool, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return unix.ESRCH
		}
		return errNoPidfd // a kernel before 5.3
	}
	defer unix.Close(fd) //nolint:errcheck // a pidfd has nothing to flush
	if !same() {
		return unix.ESRCH
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0)
}
