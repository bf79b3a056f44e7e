package notify

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// run runs the command with raw (one event's JSON and a newline) on stdin, in its own
// process group, killed as a group at the timeout. Its output is discarded; the start of
// its stderr is logged when it fails.
func (n *Notifier) run(raw []byte) {
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", n.cfg.Command)
	cmd.Stdin = bytes.NewReader(append(append([]byte(nil), raw...), '\n'))
	stderr := &capped{max: 2048}
	cmd.Stderr = stderr
	cmd.Env = n.cfg.Env
	if cmd.Env == nil {
		cmd.Env = CommandEnv(os.Environ(), n.cfg.KeepEnv)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The whole group: a shell's children (curl, notify-send) go too.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = time.Second // a grandchild that left the group and holds stderr
	start := time.Now()
	err := cmd.Run()
	switch {
	case err == nil:
	case n.ctx.Err() != nil:
		n.log.Debug("notify command killed: shutting down")
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		n.log.Warn("notify command killed at its timeout", "timeout", n.cfg.Timeout, "stderr", stderr.String())
	default:
		n.log.Warn("notify command failed", "err", err, "elapsed", time.Since(start), "stderr", stderr.String())
	}
}

// capped keeps the first max bytes written to it.
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string { return c.buf.String() }
