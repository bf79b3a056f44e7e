//go:build linux || freebsd

package controlmode

import (
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pipeReader reads tmux's output pipe with read(2) made as a raw system call, through
// the runtime's poller. An ordinary read tells the scheduler it enters a system call, and
// when the daemon has been idle a moment that wakes the runtime's monitor thread (sysmon,
// a futex wake and a thread switch) on every read: in a busy fleet, where each pane's
// redraw is one small read, that was 12 % of the daemon's CPU samples and more outside
// them. A read of a non-blocking pipe never blocks, so nothing needs to know; when the
// pipe is empty it waits in the poller like any other read.
type pipeReader struct {
	f  *os.File
	rc interface {
		Read(func(fd uintptr) bool) error
	}
}

// rawPipeReads says whether pipeFrom makes its reads raw system calls here.
const rawPipeReads = true

// pipeFrom returns the reader the read loop uses for f: a pipeReader when f is a
// non-blocking descriptor in the poller (os.Pipe's are), else f itself.
func pipeFrom(f *os.File) io.Reader {
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	nonblock := false
	if err := rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		nonblock = err == nil && fl&unix.O_NONBLOCK != 0
	}); err != nil || !nonblock {
		return f // a blocking read made raw would hold its thread and its P
	}
	return &pipeReader{f: f, rc: rc}
}

func (p *pipeReader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var errno unix.Errno
	err := p.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			if e == unix.EINTR {
				continue
			}
			n, errno = int(r), e
			return e != unix.EAGAIN
		}
	})
	switch {
	case err != nil: // the pipe was closed under the read (the poller says so)
		return 0, &os.PathError{Op: "read", Path: p.f.Name(), Err: err}
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: p.f.Name(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}
