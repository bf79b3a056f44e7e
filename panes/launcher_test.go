package panes

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// A relaunch re-checks the launcher: a runtime whose recorded argv names a program
// planted in its workspace (a record an older daemon accepted) is not restarted with it.
func TestRelaunchRechecksLauncher(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.SweepInterval = time.Hour })
	rt := e.spawn("ws", "b", "cat")
	marker := filepath.Join(e.root, "planted-ran")
	planted := filepath.Join(rt.Dir, "evil", "cat")
	if err := os.MkdirAll(filepath.Dir(planted), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(planted, []byte("#!/bin/sh\ntouch "+marker+"\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.reg.recs.mu.Lock()
	e.reg.recs.rts[rt.RuntimeID].Argv = []string{"evil/cat"}
	e.reg.recs.mu.Unlock()
	if err := syscall.Kill(rt.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the restart refused", func() bool {
		got, _ := e.reg.Get(rt.RuntimeID)
		return got.Status == nudge.StatusFailed
	})
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the planted launcher ran on restart")
	}
	got, _ := e.reg.Get(rt.RuntimeID)
	t.Logf("status %s", got.Status)
}
