package controlmode

import (
	"context"

	"github.com/hashicorp/go-hclog"
)

// Reply is the answer to one command: the body of its %begin…%end block. Lines are
// tmux's output lines (not escaped, tabs raw) and may start with '%'.
type Reply struct {
	Time   int64  // the guard's time (seconds)
	Number uint64 // the guard's command number (server-global, with gaps)
	Lines  []string
}

// Call is one command in flight, as in net/rpc. When it completes, Reply or Err is set
// and the Call is sent on Done.
type Call struct {
	Cmd   string
	Reply *Reply
	Err   error // *CommandError for %error, the connection's error if it ended first
	Done  chan *Call

	guarded string // an IfPane line's target: if-shell's block, then its branch's
	branch  bool   // if-shell's block has been read; the next flags-1 block is the branch's
}

// newCall checks cmd and makes its Call.
func newCall(cmd string) (*Call, error) {
	call := &Call{Cmd: cmd, Done: make(chan *Call, 1)}
	if target, ok := parseIfPane(cmd); ok {
		call.guarded = target
		return call, nil
	}
	if err := checkCommand(cmd); err != nil {
		return nil, err
	}
	return call, nil
}

func (call *Call) done(log hclog.Logger) {
	select {
	case call.Done <- call:
	default:
		log.Warn("call done channel full; dropping completion", "cmd", call.Cmd)
	}
}

// Go sends cmd (one tmux command line, arguments quoted with Quote) and returns at once.
// The Call is sent on its Done channel (buffered, capacity 1) when the reply arrives.
// A line that would not give exactly one reply fails with ErrUnsafeCommand unsent (a line
// built by IfPane is the one exception: the connection reads both its blocks).
func (c *Conn) Go(cmd string) *Call {
	call, err := newCall(cmd)
	if err != nil {
		call = &Call{Cmd: cmd, Done: make(chan *Call, 1), Err: err}
		call.done(c.log)
		return call
	}
	c.send([]*Call{call})
	return call
}

// Do sends one command line and waits for its reply. %error gives a *CommandError with
// the body. If ctx ends first Do returns ctx.Err(); the command stays queued and its late
// reply is discarded, so later replies still match.
func (c *Conn) Do(ctx context.Context, cmd string) (*Reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.wait(ctx, c.Go(cmd))
}

// DoAll sends cmds pipelined in one write and waits for all replies. replies[i] answers
// cmds[i] (nil if it failed); err is the first failure, in order. If any line is unsafe
// nothing is sent. If ctx ends first it returns ctx.Err() and the queue stays in sync.
func (c *Conn) DoAll(ctx context.Context, cmds ...string) ([]*Reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	calls := make([]*Call, len(cmds))
	for i, cmd := range cmds {
		call, err := newCall(cmd)
		if err != nil {
			return nil, err
		}
		calls[i] = call
	}
	c.send(calls)
	replies := make([]*Reply, len(cmds))
	var first error
	for i, call := range calls {
		r, err := c.wait(ctx, call)
		if err == ctx.Err() && err != nil {
			return replies, err
		}
		if err != nil && first == nil {
			first = err
		}
		replies[i] = r
	}
	return replies, first
}

func (c *Conn) wait(ctx context.Context, call *Call) (*Reply, error) {
	select {
	case <-call.Done:
		return call.Reply, call.Err
	case <-ctx.Done():
		c.stats.abandoned.Add(1)
		return nil, ctx.Err()
	}
}

// send queues calls and writes their lines. Queue order equals write order: both are
// appended under mu. Concurrent senders are combined: the first becomes the flusher and
// writes, in one write, every line queued until its write starts, then again for lines
// queued during that write, until none is left; the others return at once (their calls
// wait for replies as before). A fan-out of 100 triggers thus reaches tmux in a few
// writes instead of hundreds, as the bare client's pipelined commands do, and tmux reads
// them in a few passes of its event loop.
func (c *Conn) send(calls []*Call) {
	c.mu.Lock()
	if err := c.err; err != nil {
		c.mu.Unlock()
		for _, call := range calls {
			call.Err = err
			call.done(c.log)
		}
		return
	}
	c.pending = append(c.pending, calls...)
	for _, call := range calls {
		c.out = append(append(c.out, call.Cmd...), '\n')
	}
	c.stats.commands.Add(uint64(len(calls)))
	if c.flushing {
		c.mu.Unlock()
		return
	}
	c.flushing = true
	c.mu.Unlock()

	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	for {
		c.mu.Lock()
		buf := c.out
		if len(buf) == 0 {
			c.flushing = false
			c.mu.Unlock()
			return
		}
		c.out, c.wbuf = c.wbuf[:0], nil // the spare takes the lines queued from now on
		c.mu.Unlock()
		_, err := c.stdin.Write(buf)
		if cap(buf) <= 64<<10 {
			c.wbuf = buf[:0] // written: the next spare
		}
		if err != nil {
			// tmux is gone or going: end the connection and let the read loop report why
			// (its %exit reason beats our EPIPE); it fails the pending calls with that error.
			c.log.Debug("write to tmux failed", "error", err)
			c.mu.Lock()
			c.out, c.flushing = nil, false
			c.mu.Unlock()
			c.closeStdin()
			c.stop()
			return
		}
	}
}

// popPending removes the oldest pending command; nil if there is none.
func (c *Conn) popPending() *Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		return nil
	}
	call := c.pending[0]
	c.pending[0] = nil
	c.pending = c.pending[1:]
	return call
}
