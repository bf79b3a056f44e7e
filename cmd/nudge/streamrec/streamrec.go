// Package streamrec records a tmux pane's output stream, with its timing, into a small
// text format, and reads it back. Recordings of real agent CLIs doing full turns live
// under detector/testdata/streams/ and are replayed by the detector's tests: a new CLI
// version then shows up as a diff in classifications.
//
// The format is line-oriented UTF-8 text:
//
//	nudge-stream 1 agent=codex size=120x40
//	0.000 o \033[?2004h\033[>7u...
//	1.250 m READY idle composer
//	1.300 o [BRIDGE_TRIGGER id=...
//
// The first line is the header: the format version, then key=value fields (agent: the
// detector pack; size: the pane's columns x rows). Each later line is an event: seconds
// since the recording started, a kind, and its data. Kind "o" is pane output, escaped as
// tmux escapes %output (every byte below 0x20 and the backslash as \ooo, all others
// raw), so each chunk is one line. Kind "m" is a mark: the readiness the pane shows from
// that point of the stream on (READY, BUSY, NEEDS_CONFIRMATION, ERROR), then an optional
// note. Blank lines and lines starting with '#' are comments.
//
//	Recorder  records one pane through its own control-mode client; Mark adds a mark
//	Recording a parsed recording: Header fields and Events
//	Parse     reads a recording
package streamrec

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nudgehq/nudge/controlmode"
)

// Version is the format version written in the header.
const Version = 1

// Event is one line of a recording: pane output, or a mark.
type Event struct {
	At     time.Duration // since the recording started
	Output []byte        // kind "o": the raw pane output
	Mark   string        // kind "m": the readiness from here on
	Note   string        // kind "m": free text
}

// Recording is a parsed recording.
type Recording struct {
	Agent      string // the detector pack
	Cols, Rows int
	Events     []Event
}

// Recorder writes one pane's output stream to w until Close. Its methods are safe for
// concurrent use.
type Recorder struct {
	conn  *controlmode.Conn
	pane  int
	start time.Time

	mu      sync.Mutex
	started bool // the first screen is written
	repl    *strings.Replacer
	w       *bufio.Writer
	buf     []byte
	err     error
}

// Options describe a recording.
type Options struct {
	Agent      string // the detector pack, for the header
	Cols, Rows int    // the pane's size, for the header
	// Replace lists old, new pairs replaced in the output before it is written (e.g.
	// a temporary folder's path by a neutral one of the same length, which keeps
	// the layout). A string split over two output chunks is not replaced.
	Replace []string
}

// Record attaches a control-mode client (cfg: the tmux server and the pane's session;
// it is never paused) and records the output of pane (%N) into w, starting with the
// header. The caller must Close it.
func Record(ctx context.Context, cfg controlmode.Config, pane string, o Options, w io.Writer) (*Recorder, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(pane, "%"))
	if err != nil || !strings.HasPrefix(pane, "%") {
		return nil, fmt.Errorf("record: pane %q is not a %%N id", pane)
	}
	r := &Recorder{pane: n, w: bufio.NewWriter(w), start: time.Now()}
	if len(o.Replace) > 0 {
		r.repl = strings.NewReplacer(o.Replace...)
	}
	fmt.Fprintf(r.w, "nudge-stream %d agent=%s size=%dx%d\n", Version, o.Agent, o.Cols, o.Rows)
	cfg.PauseAfter = -1
	cfg.OnOutput = r.output
	if r.conn, err = controlmode.Dial(ctx, cfg); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	// The stream only draws changes: it starts with the screen as it is, drawn from a
	// cleared screen. Output until then is dropped (record an idle pane).
	screen, err := r.conn.Do(ctx, "capture-pane -p -e -t "+pane)
	if err == nil {
		var cursor *controlmode.Reply
		if cursor, err = r.conn.Do(ctx, "display-message -p -t "+pane+" '#{cursor_x} #{cursor_y}'"); err == nil {
			var x, y int
			if len(cursor.Lines) > 0 {
				fmt.Sscanf(cursor.Lines[0], "%d %d", &x, &y)
			}
			r.mu.Lock()
			r.started = true
			r.line("o", controlmode.Escape(nil, r.replace(drawScreen(screen.Lines, x, y))))
			r.mu.Unlock()
		}
	}
	if err != nil {
		r.conn.Close()
		return nil, fmt.Errorf("record: %w", err)
	}
	return r, nil
}

// drawScreen is the output that draws a capture (lines with SGR attributes) on a
// cleared screen and leaves the cursor at x, y.
func drawScreen(lines []string, x, y int) []byte {
	b := []byte("\033[0m\033[H\033[2J")
	for i, l := range lines {
		if i > 0 {
			b = append(b, "\r\n"...)
		}
		b = append(b, l...)
		b = append(b, "\033[0m"...)
	}
	return fmt.Appendf(b, "\033[%d;%dH", y+1, x+1)
}

func (r *Recorder) output(pane int, data []byte, _ time.Duration) {
	if pane != r.pane {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started {
		return
	}
	r.buf = controlmode.Escape(r.buf[:0], r.replace(data))
	r.line("o", r.buf)
}

// line writes one event line; mu is held.
func (r *Recorder) line(kind string, data []byte) {
	if r.err != nil {
		return
	}
	fmt.Fprintf(r.w, "%.3f %s ", time.Since(r.start).Seconds(), kind)
	r.w.Write(data)
	r.err = r.w.WriteByte('\n')
}

func (r *Recorder) replace(b []byte) []byte {
	if r.repl == nil {
		return b
	}
	return []byte(r.repl.Replace(string(b)))
}

// Mark records that the pane shows readiness state from this point of the stream on.
func (r *Recorder) Mark(state, note string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.line("m", []byte(strings.TrimSpace(state+" "+strings.ReplaceAll(note, "\n", " "))))
}

// Close detaches the client and flushes the recording; it returns the first write
// error. It is idempotent.
func (r *Recorder) Close() error {
	r.conn.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = r.w.Flush()
	}
	if r.err == nil {
		r.err = errClosed
		return nil
	}
	if r.err == errClosed {
		return nil
	}
	return r.err
}

var errClosed = errors.New("streamrec: closed")

// Parse reads a recording.
func Parse(rd io.Reader) (*Recording, error) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	if !sc.Scan() {
		return nil, fmt.Errorf("parse recording: no header: %v", sc.Err())
	}
	rec := &Recording{}
	f := strings.Fields(sc.Text())
	if len(f) < 2 || f[0] != "nudge-stream" || f[1] != strconv.Itoa(Version) {
		return nil, fmt.Errorf("parse recording: bad header %q", sc.Text())
	}
	for _, kv := range f[2:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "agent":
			rec.Agent = v
		case "size":
			fmt.Sscanf(v, "%dx%d", &rec.Cols, &rec.Rows)
		}
	}
	for n := 2; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		ev, err := parseEvent(line)
		if err != nil {
			return nil, fmt.Errorf("parse recording: line %d: %w", n, err)
		}
		rec.Events = append(rec.Events, ev)
	}
	return rec, sc.Err()
}

func parseEvent(line []byte) (Event, error) {
	at, rest, ok := bytes.Cut(line, []byte(" "))
	kind, data, ok2 := bytes.Cut(rest, []byte(" "))
	secs, err := strconv.ParseFloat(string(at), 64)
	if !ok || !ok2 || err != nil {
		return Event{}, fmt.Errorf("bad event %.60q", line)
	}
	ev := Event{At: time.Duration(secs * float64(time.Second))}
	switch string(kind) {
	case "o":
		ev.Output = controlmode.Unescape(nil, data)
	case "m":
		state, note, _ := strings.Cut(string(data), " ")
		ev.Mark, ev.Note = state, note
	default:
		return Event{}, fmt.Errorf("unknown kind %q", kind)
	}
	return ev, nil
}
