package panes

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// The host's table knows this process, its parent, its environment, and a child it
// starts; the child is in the listing with this process as its parent.
func TestHostProcTable(t *testing.T) {
	t.Setenv("NUDGE_PROCTABLE_TEST", "here")
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	me, ok := hostProcs.stat(os.Getpid())
	if !ok || me.ppid != os.Getppid() || me.start == 0 {
		t.Fatalf("stat(self) = %+v %v, want ppid %d", me, ok, os.Getppid())
	}
	child, ok := hostProcs.list()[cmd.Process.Pid]
	if !ok || child.ppid != os.Getpid() || child.state == 'Z' {
		t.Fatalf("list()[child] = %+v %v, want a live child of %d", child, ok, os.Getpid())
	}
	// The state may move between the two reads (running just after exec, then asleep).
	if st, _ := hostProcs.stat(cmd.Process.Pid); st.ppid != child.ppid || st.start != child.start {
		t.Fatalf("stat(child) = %+v, list says %+v", st, child)
	}
	if v := envValue(hostProcs.environ(cmd.Process.Pid), "NUDGE_PROCTABLE_TEST"); v != "here" {
		t.Fatalf("environ(child): NUDGE_PROCTABLE_TEST=%q", v)
	}
	if _, ok := hostProcs.stat(1 << 30); ok {
		t.Fatal("stat of a pid that cannot exist succeeded")
	}
}

// Signalling by pid after a start-time check (the path of kernels without pidfds: macOS,
// FreeBSD, Linux before 5.3): a stale start time signals nothing; the right one does.
func TestSignalChecked(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	pid := cmd.Process.Pid
	st, ok := hostProcs.stat(pid)
	if !ok {
		t.Fatal("child not in the table")
	}
	if err := signalChecked(hostProcs, pid, st.start+1, syscall.SIGTERM); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("stale start: %v, want ESRCH", err)
	}
	if err := signalChecked(hostProcs, pid, st.start, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	// Only the second signal reached it: sleep dies of SIGUSR1, not of the SIGTERM.
	err := <-done
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGUSR1 {
		t.Fatalf("the child ended with %v, want killed by SIGUSR1", err)
	}
	done <- nil // for the cleanup
}

// procargs2Env takes the environment out of a KERN_PROCARGS2 buffer (macOS).
func TestProcargs2Env(t *testing.T) {
	buf := func(argc uint32, rest string) []byte {
		b := binary.LittleEndian.AppendUint32(nil, argc)
		return append(b, rest...)
	}
	for i, tt := range []struct {
		in   []byte
		want string
	}{
		{buf(2, "/bin/sh\x00\x00\x00\x00sh\x00-c\x00TMUX=/s,1,0\x00TMUX_PANE=%3\x00ptr_munge=\x00"), "TMUX=/s,1,0\x00TMUX_PANE=%3\x00ptr_munge=\x00"},
		{buf(0, "/bin/sh\x00\x00A=1\x00"), "A=1\x00"},
		{buf(3, "/bin/sh\x00\x00a\x00b\x00"), ""},
		{buf(1, "/bin/sh"), ""},
		{[]byte{1, 0}, ""},
	} {
		if got := procargs2Env(tt.in); string(got) != tt.want {
			t.Errorf("#%d: got %q, want %q", i, got, tt.want)
		}
	}
}

// parseKinfo decodes FreeBSD kinfo_proc records at their 64-bit offsets.
func TestParseKinfo(t *testing.T) {
	rec := func(pid, ppid int32, stat int8, sec, usec int64) []byte {
		b := make([]byte, kinfoSize)
		le := binary.LittleEndian
		le.PutUint32(b, kinfoSize)
		le.PutUint32(b[kinfoPID:], uint32(pid))
		le.PutUint32(b[kinfoPPID:], uint32(ppid))
		le.PutUint64(b[kinfoStartSec:], uint64(sec))
		le.PutUint64(b[kinfoStartUs:], uint64(usec))
		b[kinfoStat] = byte(stat)
		return b
	}
	b := bytes.Join([][]byte{rec(10, 1, 3, 1700000000, 5), rec(11, 10, 5, 1700000001, 0)}, nil)
	got := parseKinfo(append(b, 1, 2, 3))
	want := map[int]procStat{
		10: {ppid: 1, state: 'S', start: 1700000000_000005},
		11: {ppid: 10, state: 'Z', start: 1700000001_000000},
	}
	if len(got) != len(want) || got[10] != want[10] || got[11] != want[11] {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	short := rec(12, 1, 2, 1, 1)
	binary.LittleEndian.PutUint32(short, 1000) // another layout: not read
	if got := parseKinfo(short); len(got) != 0 {
		t.Fatalf("a record of another size was read: %+v", got)
	}
}
