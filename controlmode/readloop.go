package controlmode

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"
)

// readState is the read goroutine's private state.
type readState struct {
	rd    *Reader
	out   []byte             // decoded output, reused for every %output line
	panes map[int]*utf8Carry // per-pane incomplete UTF-8 tail
	block *block             // the %begin block being read, nil outside blocks
	// branch is the IfPane call whose if-shell block has ended: the next flags-1
	// block is its branch's and answers it.
	branch *Call
	exit   *string // reason of a %exit line, once seen
}

// block is a %begin…%end block in progress.
type block struct {
	guard Guard
	key   []byte // "time number flags", repeated by %end/%error
	call  *Call  // nil for flags-0 blocks
	lines []string
}

func (rs *readState) init(r io.Reader) {
	rs.rd = NewReader(r)
	rs.panes = make(map[int]*utf8Carry)
}

func (rs *readState) exitReason() (string, bool) {
	if rs.exit != nil {
		return *rs.exit, true
	}
	// tmux died inside a block: the client's %exit then lands as a body line.
	if b := rs.block; b != nil && len(b.lines) > 0 {
		last := b.lines[len(b.lines)-1]
		if last == "%exit" || len(last) > 6 && last[:6] == "%exit " {
			return last[min(len(last), 6):], true
		}
	}
	return "", false
}

// readLoop reads lines until the input ends and dispatches each one.
func (c *Conn) readLoop() error {
	rs := &c.rs
	for {
		if rs.block != nil {
			rs.rd.MaxLine = c.cfg.MaxReplyLine
		} else {
			rs.rd.MaxLine = c.cfg.MaxLine
		}
		line, err := rs.rd.ReadLine()
		if errors.Is(err, ErrLineTooLong) {
			c.stats.skipped.Add(1)
			c.log.Warn("skipped over-long line", "in_block", rs.block != nil)
			continue
		}
		if err != nil {
			return err
		}
		c.stats.lines.Add(1)
		if rs.block != nil {
			c.blockLine(line)
			continue
		}
		c.topLine(line)
	}
}

var (
	prefixOutput   = []byte("%output ")
	prefixExtended = []byte("%extended-output ")
	prefixBegin    = []byte("%begin ")
	prefixEnd      = []byte("%end ")
	prefixError    = []byte("%error ")
)

// topLine handles a line outside any block.
func (c *Conn) topLine(line []byte) {
	switch {
	case bytes.HasPrefix(line, prefixOutput):
		pane, data, ok := outputHeader(line[len(prefixOutput):])
		c.output(line, pane, 0, data, ok)
	case bytes.HasPrefix(line, prefixExtended):
		pane, age, data, ok := extendedOutputHeader(line[len(prefixExtended):])
		c.output(line, pane, age, data, ok)
	case bytes.HasPrefix(line, prefixBegin):
		c.begin(line)
	default:
		c.notification(line)
	}
}

// output decodes one output line into the reused buffer, carrying an incomplete UTF-8
// tail per pane, and hands it to OnOutput. It does not allocate.
func (c *Conn) output(line []byte, pane int, age time.Duration, data []byte, ok bool) {
	if !ok {
		c.malformed(line, "bad output line")
		return
	}
	c.stats.outputLines.Add(1)
	rs := &c.rs
	carry := rs.panes[pane]
	if carry == nil {
		carry = new(utf8Carry)
		rs.panes[pane] = carry
	}
	buf := append(rs.out[:0], carry.b[:carry.n]...)
	buf = Unescape(buf, data)
	buf = carry.hold(buf)
	rs.out = buf
	if len(buf) == 0 {
		return
	}
	c.stats.outputBytes.Add(uint64(len(buf)))
	c.cfg.OnOutput(pane, buf, age)
}

// begin starts a block; flags 1 answers the oldest pending command.
func (c *Conn) begin(line []byte) {
	g, ok := parseGuard(line[len(prefixBegin):])
	if !ok {
		c.malformed(line, "bad %begin")
		return
	}
	g.Kind = "begin"
	b := &block{guard: g, key: append([]byte(nil), line[len(prefixBegin):]...)}
	if g.Flags&1 == 1 {
		b.call, c.rs.branch = c.rs.branch, nil
		if b.call == nil {
			b.call = c.popPending()
		}
		if b.call == nil {
			c.log.Warn("reply block with no pending command", "line", string(line))
		}
	}
	c.rs.block = b
}

// blockLine handles a line inside a block: its end, a %pause/%continue notification
// (tmux 3.3a writes those synchronously, inside the block), or a body line.
func (c *Conn) blockLine(line []byte) {
	b := c.rs.block
	switch {
	case bytes.HasPrefix(line, prefixEnd) && bytes.Equal(line[len(prefixEnd):], b.key):
		c.endBlock(false)
	case bytes.HasPrefix(line, prefixError) && bytes.Equal(line[len(prefixError):], b.key):
		c.endBlock(true)
	case isFlowLine(line):
		c.notification(line)
	default:
		b.lines = append(b.lines, string(line))
	}
}

// isFlowLine matches ^%(pause|continue) %\d+$.
func isFlowLine(line []byte) bool {
	var rest []byte
	switch {
	case bytes.HasPrefix(line, []byte("%pause %")):
		rest = line[len("%pause %"):]
	case bytes.HasPrefix(line, []byte("%continue %")):
		rest = line[len("%continue %"):]
	default:
		return false
	}
	_, ok := parseUint(rest)
	return ok
}

func (c *Conn) endBlock(isErr bool) {
	b := c.rs.block
	c.rs.block = nil
	reply := &Reply{Time: b.guard.Time, Number: b.guard.Number, Lines: b.lines}
	if isErr {
		c.stats.commandErrors.Add(1)
	}
	if b.call != nil {
		if b.call.guarded != "" && !b.call.branch && !isErr {
			b.call.branch = true // if-shell ran; its branch answers
			c.rs.branch = b.call
			return
		}
		if b.call.guarded != "" && !isErr {
			if gone, ok := parseGone(b.call.guarded, b.lines); ok {
				b.call.Err = gone
				b.call.done(c.log)
				return
			}
		}
		if isErr {
			b.call.Err = &CommandError{Cmd: b.call.Cmd, Lines: b.lines}
		} else {
			b.call.Reply = reply
		}
		b.call.done(c.log)
		return
	}
	c.stats.unsolicited.Add(1)
	c.mu.Lock()
	if isErr && !c.attached && c.startErr == nil {
		c.startErr = &CommandError{Cmd: "attach-session", Lines: b.lines}
	}
	c.mu.Unlock()
	c.cfg.OnEvent(&Unsolicited{Reply: reply, Error: isErr})
}

// notification parses and delivers a non-output line outside a block.
func (c *Conn) notification(line []byte) {
	ev, err := ParseLine(line)
	if err != nil {
		c.malformed(line, err.Error())
		return
	}
	switch e := ev.(type) {
	case *Unknown:
		c.stats.unknown.Add(1)
	case *Guard: // a stray %end/%error outside any block
		c.malformed(line, "guard outside a block")
		return
	case *Pause:
		c.stats.pauses.Add(1)
		c.Go("refresh-client -A '%" + strconv.Itoa(e.Pane) + ":continue'")
	case *SessionChanged:
		c.mu.Lock()
		c.session = *e
		first := !c.attached
		c.attached = true
		c.mu.Unlock()
		if first {
			close(c.attachedCh)
		}
	case *Exit:
		reason := e.Reason
		c.rs.exit = &reason
	}
	c.cfg.OnEvent(ev)
}

func (c *Conn) malformed(line []byte, reason string) {
	c.stats.malformed.Add(1)
	c.stats.unknown.Add(1)
	c.log.Warn("malformed line from tmux", "reason", reason, "line", string(line))
	c.cfg.OnEvent(&Unknown{Line: string(line)})
}

// utf8Carry holds the incomplete UTF-8 sequence at the end of a pane's last output line.
type utf8Carry struct {
	b [3]byte
	n int
}

// hold moves an incomplete trailing UTF-8 sequence of buf into the carry and returns
// the rest. Invalid bytes are never held, so the stream stays byte-exact.
func (u *utf8Carry) hold(buf []byte) []byte {
	u.n = 0
	for i := 1; i <= 3 && i <= len(buf); i++ {
		c := buf[len(buf)-i]
		if c < 0x80 {
			return buf
		}
		if c < 0xc0 {
			continue // continuation byte: look further back
		}
		if seqLen(c) > i {
			u.n = copy(u.b[:], buf[len(buf)-i:])
			return buf[:len(buf)-i]
		}
		return buf
	}
	return buf
}

// seqLen is the length of the UTF-8 sequence a lead byte starts (1 for invalid leads).
func seqLen(c byte) int {
	switch {
	case c >= 0xc2 && c <= 0xdf:
		return 2
	case c >= 0xe0 && c <= 0xef:
		return 3
	case c >= 0xf0 && c <= 0xf4:
		return 4
	}
	return 1
}
