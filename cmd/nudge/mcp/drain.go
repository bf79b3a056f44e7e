package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// drainLimit bounds how long the server keeps answering after its input ended: the longest
// a tool call may wait, and a little more.
const drainLimit = MaxWait + 30*time.Second

// StdioTransport is the SDK's newline-delimited JSON transport over r and w, except that the
// end of r does not end the session until every request read from r has been answered: a
// client that writes initialize and tools/list and then closes its end gets both answers.
// The SDK alone closes the connection at end of input, dropping answers still to come.
// The wait ends early when ctx (Connect's) ends, the transport is closed, or writing fails.
func StdioTransport(r io.Reader, w io.WriteCloser) sdk.Transport {
	return &drainTransport{r: r, w: w}
}

type drainTransport struct {
	r io.Reader
	w io.WriteCloser
}

func (t *drainTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	d := &drain{ctx: ctx, pending: map[string]int{}, kick: make(chan struct{}, 1)}
	return (&sdk.IOTransport{
		Reader: &drainReader{d: d, r: t.r},
		Writer: &drainWriter{d: d, w: t.w},
	}).Connect(ctx)
}

// drain counts the requests read and not yet answered.
type drain struct {
	ctx      context.Context
	mu       sync.Mutex
	pending  map[string]int // request id -> how many read and not answered
	in, out  lineBuf
	done     bool // closed, or a write failed: nothing more can be answered
	kick     chan struct{}
	waitOnce sync.Once
}

func (d *drain) signal() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// wait returns once nothing read is unanswered, or it can no longer be answered.
func (d *drain) wait() {
	timer := time.NewTimer(drainLimit)
	defer timer.Stop()
	for {
		d.mu.Lock()
		idle := len(d.pending) == 0 || d.done
		d.mu.Unlock()
		if idle {
			return
		}
		select {
		case <-d.kick:
		case <-d.ctx.Done():
			return
		case <-timer.C:
			return
		}
	}
}

func (d *drain) stop() {
	d.mu.Lock()
	d.done = true
	d.mu.Unlock()
	d.signal()
}

type drainReader struct {
	d *drain
	r io.Reader
}

func (r *drainReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.d.mu.Lock()
	r.d.in.feed(p[:n], func(line []byte) {
		for _, id := range requestIDs(line) {
			r.d.pending[id]++
		}
	})
	r.d.mu.Unlock()
	if err == io.EOF {
		r.d.waitOnce.Do(r.d.wait)
	}
	return n, err
}

func (r *drainReader) Close() error {
	r.d.stop()
	if c, ok := r.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

type drainWriter struct {
	d *drain
	w io.WriteCloser
}

func (w *drainWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		w.d.stop()
		return n, err
	}
	w.d.mu.Lock()
	w.d.out.feed(p[:n], func(line []byte) {
		if id, ok := responseID(line); ok && w.d.pending[id] > 0 {
			if w.d.pending[id]--; w.d.pending[id] == 0 {
				delete(w.d.pending, id)
			}
		}
	})
	w.d.mu.Unlock()
	w.d.signal()
	return n, nil
}

func (w *drainWriter) Close() error {
	w.d.stop()
	return w.w.Close()
}

// lineBuf splits a byte stream into lines, keeping at most sdk.DefaultMaxLineLength bytes
// of one: a longer line is skipped (the SDK refuses it as well).
type lineBuf struct {
	buf  []byte
	skip bool
}

func (b *lineBuf) feed(p []byte, line func([]byte)) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !b.skip {
			if len(b.buf)+len(chunk) > sdk.DefaultMaxLineLength {
				b.buf, b.skip = nil, true
			} else {
				b.buf = append(b.buf, chunk...)
			}
		}
		if i < 0 {
			return
		}
		if !b.skip {
			line(b.buf)
		}
		b.buf, b.skip = b.buf[:0], false
		p = p[i+1:]
	}
}

// message is the part of a JSON-RPC message that tells a request (method and id) from a
// response (id, no method) and a notification (no id).
type message struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
}

// requestIDs are the ids of the requests in one line: a message or a batch of them.
func requestIDs(line []byte) []string {
	var ids []string
	for _, m := range messages(line) {
		if id, ok := idKey(m.ID); ok && m.Method != nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// responseID is the id a line answers, if it is a response.
func responseID(line []byte) (string, bool) {
	var m message
	if json.Unmarshal(line, &m) != nil || m.Method != nil {
		return "", false
	}
	return idKey(m.ID)
}

func messages(line []byte) []message {
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '[' {
		var batch []message
		json.Unmarshal(line, &batch) //nolint:errcheck // not a batch of messages: no requests
		return batch
	}
	var m message
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	return []message{m}
}

// idKey is one spelling per id: 1 and 1.0 are the same number, "1" a string.
func idKey(raw json.RawMessage) (string, bool) {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), true
	case string:
		return strconv.Quote(v), true
	}
	return "", false
}
