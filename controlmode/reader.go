package controlmode

import (
	"bufio"
	"io"
)

// DefaultMaxLine is the default cap on a notification line (Config.MaxLine).
const DefaultMaxLine = 1 << 20

// DefaultMaxReplyLine is the default cap on one line of a command reply
// (Config.MaxReplyLine): reply lines have no limit in tmux (capture-pane, show-buffer),
// but memory is bounded.
const DefaultMaxReplyLine = 64 << 20

// readBufferSize is the bufio.Reader size: large enough that every %output line tmux
// writes (at most about 11 KB escaped) is returned by ReadSlice without a copy.
const readBufferSize = 64 << 10

// Reader reads the lines tmux writes in control mode. Like textproto.Reader it returns
// slices into a reused buffer: a line is valid only until the next call to ReadLine.
// A line longer than MaxLine is skipped (ReadLine returns ErrLineTooLong once for it) and
// reading goes on with the next line.
type Reader struct {
	// MaxLine is the longest line returned; 0 means DefaultMaxLine. It may be changed
	// between calls (a Conn raises it inside reply blocks).
	MaxLine int

	br       *bufio.Reader
	buf      []byte // assembles lines longer than br's buffer; reused
	skipping bool
}

// NewReader returns a Reader reading from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, readBufferSize)}
}

// ReadLine returns the next line without its trailing "\n" or "\r\n". At the end of input
// it returns io.EOF, or io.ErrUnexpectedEOF if the input ended inside a line.
func (r *Reader) ReadLine() ([]byte, error) {
	max := r.MaxLine
	if max <= 0 {
		max = DefaultMaxLine
	}
	if cap(r.buf) > 4*readBufferSize {
		r.buf = nil // do not keep a huge reply's buffer alive
	}
	r.buf = r.buf[:0]
	for {
		frag, err := r.br.ReadSlice('\n')
		switch err {
		case nil:
			return r.finish(frag, max)
		case bufio.ErrBufferFull:
			if !r.skipping && len(r.buf)+len(frag) > max+1 { // +1: a trailing \r
				r.skipping, r.buf = true, r.buf[:0]
			}
			if !r.skipping {
				r.buf = append(r.buf, frag...)
			}
		default:
			if len(frag) > 0 || len(r.buf) > 0 || r.skipping {
				r.skipping = false
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

func (r *Reader) finish(frag []byte, max int) ([]byte, error) {
	if r.skipping {
		r.skipping, r.buf = false, r.buf[:0]
		return nil, ErrLineTooLong
	}
	line := frag
	if len(r.buf) > 0 {
		r.buf = append(r.buf, frag...)
		line = r.buf
	}
	if line = trimEOL(line); len(line) > max {
		r.buf = r.buf[:0]
		return nil, ErrLineTooLong
	}
	return line, nil
}
