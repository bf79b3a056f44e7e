package controlmode

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
)

// sleeper starts a child that runs until signalled and returns a channel with how it
// ended.
func sleeper(t *testing.T) (*exec.Cmd, chan syscall.Signal) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan syscall.Signal, 1)
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			ended <- ee.Sys().(syscall.WaitStatus).Signal()
			return
		}
		ended <- 0
	}()
	return cmd, ended
}

// The watch macOS uses, run here: once nudge's end of the pipe is closed (what the
// kernel does when nudge dies), the watched child gets SIGTERM.
func TestPipeWatchEndsChildWhenParentGoes(t *testing.T) {
	cmd, ended := sleeper(t)
	w := startPipeWatch(cmd.Process.Pid)
	if w == nil {
		_ = cmd.Process.Kill()
		t.Fatal("the watch did not start")
	}
	w.w.Close()
	if sig := <-ended; sig != syscall.SIGTERM {
		t.Fatalf("the child ended by signal %v, want SIGTERM", sig)
	}
	if err := w.sh.Wait(); err != nil {
		t.Fatalf("the watch: %v", err)
	}
}

// A watch stopped while nudge lives (the child ended or was closed) signals nothing.
func TestPipeWatchStopLeavesChild(t *testing.T) {
	cmd, ended := sleeper(t)
	pipeWatch{}.prepare(cmd)
	pipeWatch{}.watch(cmd)() // started and stopped
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("the child is gone after the watch stopped: %v", err)
	}
	if sig := <-ended; sig != syscall.SIGKILL {
		t.Fatalf("the child ended by signal %v, want the test's SIGKILL", sig)
	}
}
