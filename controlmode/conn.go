package controlmode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Conn is one tmux control client. It owns the tmux client process (or the ssh process
// running it) and one read goroutine, both stopped by Close. Its methods are safe for
// concurrent use.
type Conn struct {
	cfg     Config
	log     hclog.Logger
	cmd     *exec.Cmd // nil for connections over a plain reader/writer (tests)
	unwatch func()    // ends the parent-death watch of cmd (deathwatch.go); after Wait
	stdin   io.Writer
	stdout  io.Reader
	stderr  *tailBuffer

	stopOnce  sync.Once
	stopFn    func() // cancels the process context (its Cancel closes stdin)
	stdinOnce sync.Once
	closeOnce sync.Once

	writeMu sync.Mutex // serializes writes to stdin (send's flusher, Close)
	wbuf    []byte     // the flusher's spare buffer

	mu       sync.Mutex
	pending  []*Call // FIFO of commands awaiting a flags-1 block
	out      []byte  // their lines not yet written, in the same order
	flushing bool    // a sender is writing out; it also writes what others queue meanwhile
	err      error   // first fatal error; once set no command is accepted
	attached bool

	done       chan struct{} // closed when the connection has fully ended
	attachedCh chan struct{} // closed on the first %session-changed

	clientName string
	caps       Caps // the server's version and what it supports (Dial; zero for NewConn)
	session    SessionChanged
	startErr   *CommandError // a flags-0 %error before attaching (can't find session)

	stats counters
	rs    readState // owned by the read goroutine
}

// newConn returns a Conn reading tmux's output from r and writing commands to w. The
// caller starts it with go c.run().
func newConn(cfg Config, r io.Reader, w io.Writer) *Conn {
	cfg = cfg.withDefaults()
	c := &Conn{
		cfg:        cfg,
		log:        cfg.Logger,
		stdin:      w,
		stdout:     r,
		stderr:     &tailBuffer{max: 4096},
		stopFn:     func() {},
		done:       make(chan struct{}),
		attachedCh: make(chan struct{}),
	}
	if f, ok := r.(*os.File); ok {
		c.rs.init(pipeFrom(f))
	} else {
		c.rs.init(r)
	}
	return c
}

// NewConn runs a Conn over an existing stream: r is what tmux writes (its control-mode
// output), w is where commands go (tmux's stdin). It starts the read goroutine and
// returns at once, without waiting for %session-changed. It serves tests and benchmarks
// that play tmux, and transports Dial does not cover. Close writes the detaching empty
// line, closes w if it is an io.Closer, and waits for r to end (closing r if it is an
// io.Closer and does not end within twice Config.CloseTimeout). Session may be empty.
func NewConn(cfg Config, r io.Reader, w io.Writer) *Conn {
	c := newConn(cfg, r, w)
	go c.run()
	return c
}

// Dial starts `tmux -u -C attach-session -t =Session -f pause-after=N` (through ssh if
// SSHHost is set), creating the session first if CreateSession is set, and returns once
// tmux reports the client attached (%session-changed). It fails with a clear error if the
// binary is missing, the session does not exist (ErrNoSession), tmux exits at start, or
// ctx ends first. The caller must Close the Conn.
func Dial(ctx context.Context, cfg Config) (*Conn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.CreateSession {
		if err := ensureSession(ctx, &cfg); err != nil {
			return nil, fmt.Errorf("dial %q: %w", cfg.Session, err)
		}
	}
	c, err := start(cfg)
	if err != nil {
		return nil, fmt.Errorf("dial %q: %w", cfg.Session, err)
	}
	if err := c.waitAttached(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("dial %q: %w", cfg.Session, err)
	}
	reply, err := c.Do(ctx, "display-message -p '#{version} #{client_name}'")
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("dial %q: client name: %w", cfg.Session, err)
	}
	if len(reply.Lines) > 0 {
		version, name, _ := strings.Cut(reply.Lines[0], " ")
		c.caps, c.clientName = ParseVersion(version), name
	}
	if err := c.caps.Check(); err != nil {
		c.Close()
		return nil, fmt.Errorf("dial %q: %w", cfg.Session, err)
	}
	return c, nil
}

// start runs the control client process over two pipes and starts the read goroutine.
func start(cfg Config) (*Conn, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := cfg.command(ctx, cfg.attachArgs()...)
	c := newConn(cfg, outR, inW)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, c.stderr
	cmd.Cancel = func() error { c.closeStdin(); return nil }
	cmd.WaitDelay = cfg.CloseTimeout
	hostWatch.prepare(cmd)
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		cancel()
		inW.Close()
		outR.Close()
		return nil, err
	}
	c.cmd, c.stopFn, c.unwatch = cmd, cancel, hostWatch.watch(cmd)
	c.log.Debug("control client started", "pid", cmd.Process.Pid, "args", cmd.Args)
	go c.run()
	return c, nil
}

// waitAttached waits for %session-changed, the end of the connection or ctx.
func (c *Conn) waitAttached(ctx context.Context) error {
	select {
	case <-c.attachedCh:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
	}
	stderr := c.stderr.String()
	if c.startErr != nil {
		body := strings.Join(c.startErr.Lines, "\n")
		if strings.Contains(body, "can't find session") || strings.Contains(body, "no sessions") {
			return fmt.Errorf("%w: %w", ErrNoSession, c.startErr)
		}
		return c.startErr
	}
	if strings.Contains(stderr, "no server running") || strings.Contains(stderr, "error connecting") {
		return fmt.Errorf("%w: %s", ErrNoSession, stderr)
	}
	if stderr != "" {
		return fmt.Errorf("tmux exited before attaching: %s: %w", stderr, c.Err())
	}
	return fmt.Errorf("tmux exited before attaching: %w", c.Err())
}

// run is the read goroutine: it reads until tmux's output ends, then fails every pending
// command, reaps the process and closes Done.
func (c *Conn) run() {
	defer close(c.done)
	rerr := c.readLoop()
	c.fail(c.endError(rerr))
	if b := c.rs.block; b != nil && b.call != nil { // tmux ended inside our reply
		b.call.Err = c.Err()
		b.call.done(c.log)
	} else if call := c.rs.branch; call != nil { // between an IfPane line's two blocks
		call.Err = c.Err()
		call.done(c.log)
	}
	c.stop()
	if c.cmd != nil {
		if err := c.cmd.Wait(); err != nil {
			c.log.Debug("control client exited", "error", err, "stderr", c.stderr.String())
		}
		c.unwatch()
	}
	if cl, ok := c.stdout.(io.Closer); ok {
		cl.Close()
	}
}

// endError turns the read loop's end into the connection's error.
func (c *Conn) endError(rerr error) error {
	reason, ok := c.rs.exitReason()
	switch {
	case ok:
		return &ExitError{Reason: reason}
	case errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF):
		if s := c.stderr.String(); s != "" {
			return fmt.Errorf("read: tmux exited without %%exit (%s): %w", s, io.ErrUnexpectedEOF)
		}
		return fmt.Errorf("read: tmux exited without %%exit: %w", io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("read: %w", rerr)
}

// fail records err as the connection's error (if it is the first) and fails every
// pending command with the connection's error.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	err, calls := c.err, c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, call := range calls {
		call.Err = err
		call.done(c.log)
	}
}

// stop ends the process's context: exec then closes stdin (Cancel) and kills the tmux
// client process (never the server) if it has not exited after CloseTimeout.
func (c *Conn) stop() { c.stopOnce.Do(c.stopFn) }

func (c *Conn) closeStdin() {
	c.stdinOnce.Do(func() {
		if cl, ok := c.stdin.(io.Closer); ok {
			cl.Close()
		}
	})
}

// Close detaches this control client only (an empty line, then EOF on its stdin), waits
// for the process and the read goroutine to end, and returns nil. It is idempotent and
// safe to call concurrently; afterwards Err returns ErrClosed (unless the connection had
// already failed) and pending commands fail. It must not be called from Config.OnOutput
// or Config.OnEvent, since it waits for the goroutine running them.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		if c.err == nil {
			c.err = ErrClosed
		}
		c.mu.Unlock()
		if c.writeMu.TryLock() {
			if f, ok := c.stdin.(interface{ SetWriteDeadline(time.Time) error }); ok {
				f.SetWriteDeadline(time.Now().Add(c.cfg.CloseTimeout))
			}
			c.stdin.Write([]byte{'\n'}) // an empty line detaches this client
			c.writeMu.Unlock()
		}
		c.closeStdin()
		c.stop()
	})
	select {
	case <-c.done:
		return nil
	case <-time.After(2 * c.cfg.CloseTimeout):
	}
	// tmux never closed our stdout (a frozen server): unblock the reader ourselves.
	if cl, ok := c.stdout.(io.Closer); ok {
		cl.Close()
	}
	<-c.done
	return nil
}

// Done is closed when the connection has ended (%exit, EOF, tmux died, Close) and its
// process and goroutine are gone.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns the first fatal error: *ExitError for %exit, an error wrapping
// io.ErrUnexpectedEOF for tmux dying without %exit, ErrClosed after Close. It is nil
// while the connection is up.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// ClientName is this control client's name in tmux, "client-<pid>".
func (c *Conn) ClientName() string { return c.clientName }

// Caps is what the server supports, learned from its version at Dial. A Conn made by
// NewConn has the zero Caps (unknown version, assumed newest).
func (c *Conn) Caps() Caps { return c.caps }

// Session is the session this client attached to (from %session-changed).
func (c *Conn) Session() SessionChanged {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// Pid is the process id of the control client: tmux, or the ssh process running it for
// a remote host. 0 for a connection over a plain reader/writer.
func (c *Conn) Pid() int {
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}
