// Package panereader is the program the benchmarks run inside a tmux pane, and the
// harness side that talks to it.
//
//	Run      the pane side: raw tty, CLOCK_MONOTONIC stamp on every read(2), optional echo
//	Listener the harness side: accepts readers, one *Pane each
//	Pane     one reader's stamps (markers, Enter, writes) and its command line
//
// A reader connects to the harness's unix socket and says "hello NAME PID". On every
// read(2) from its tty it stamps CLOCK_MONOTONIC and reports each complete prompt
// marker `{M########}` ("m MARKER TS") and each carriage return ("enter TS"). With echo
// on it writes the bytes back (a CR as CR LF and a "$ " prompt, so the cursor line looks
// like an idle shell), which is what makes them appear as %output. The harness can ask it
// to print a line ("print TAG TEXT", answered "w TAG TS" after the write), to stream a
// line every interval ("stream 10ms" / "quiet"), to redraw a spinner row every interval
// ("spin 80ms"), to replay a recorded output stream at its recorded pace, in a loop, from a
// fraction of its length on ("replay FILE 0.25"), to print a burst of busy lines then a
// prompt ("burst TAG N INTERVAL", answered with the stamp of the last write), or to
// report how many writes and bytes it has written to its tty ("count", answered "c N
// BYTES").
package panereader

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nudgehq/nudge/cmd/nudge/streamrec"
	"golang.org/x/term"
)

// MarkerLen is the length of a marker `{M########}`.
const MarkerLen = 11

// Marker returns the marker for sequence number seq.
func Marker(seq int) string { return fmt.Sprintf("{M%08d}", seq%100000000) }

// Mono is CLOCK_MONOTONIC in nanoseconds: comparable across processes, unlike Go's
// monotonic clock readings.
func Mono() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// Options configure the pane side.
type Options struct {
	Name string // reported in the hello line
	Echo bool   // write what is read back to the tty
}

// reader is the pane side's state. out serialises writes to the tty.
type reader struct {
	opt    Options
	conn   net.Conn
	cmu    sync.Mutex                      // conn writes
	out    sync.Mutex                      // tty writes
	job    chan func(stop <-chan struct{}) // the output job to run instead of the current one (nil: none)
	writes atomic.Int64
	bytes  atomic.Int64
}

// Run is the pane side. It returns when the tty or the harness connection ends.
func Run(sock string, opt Options) error {
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := term.MakeRaw(0); err != nil {
		return err
	}
	r := &reader{opt: opt, conn: conn, job: make(chan func(<-chan struct{}), 1)}
	r.report("hello %s %d", opt.Name, os.Getpid())
	if opt.Echo {
		r.write([]byte("$ "))
	}
	go r.commands()
	go r.jobs()
	return r.readLoop()
}

func (r *reader) report(format string, args ...any) {
	r.cmu.Lock()
	fmt.Fprintf(r.conn, format+"\n", args...)
	r.cmu.Unlock()
}

// write writes b to the tty and returns the CLOCK_MONOTONIC stamp after the write.
func (r *reader) write(b []byte) int64 {
	r.out.Lock()
	defer r.out.Unlock()
	r.writes.Add(1)
	r.bytes.Add(int64(len(b)))
	for len(b) > 0 {
		n, err := unix.Write(1, b)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			os.Exit(0) // the pane is gone
		}
		b = b[n:]
	}
	return Mono()
}

func (r *reader) readLoop() error {
	buf := make([]byte, 64<<10)
	var acc []byte
	var echo []byte
	for {
		n, err := unix.Read(0, buf)
		ts := Mono()
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return err
		}
		in := buf[:n]
		acc = scanMarkers(append(acc, in...), func(m []byte) { r.report("m %s %d", m, ts) })
		if i := strings.IndexByte(string(in), '\r'); i >= 0 {
			r.report("enter %d", ts)
		}
		if r.opt.Echo {
			echo = echo[:0]
			for _, c := range in {
				if c == '\r' {
					echo = append(echo, "\r\n$ "...)
				} else {
					echo = append(echo, c)
				}
			}
			r.write(echo)
		}
	}
}

// scanMarkers reports every complete marker in acc and returns the tail to keep.
func scanMarkers(acc []byte, found func([]byte)) []byte {
	for {
		i := strings.Index(string(acc), "{M")
		if i < 0 || len(acc) < i+MarkerLen {
			break
		}
		if acc[i+MarkerLen-1] == '}' {
			found(acc[i : i+MarkerLen])
		}
		acc = acc[i+2:]
	}
	if len(acc) > 16 {
		acc = append(acc[:0], acc[len(acc)-16:]...)
	}
	return acc
}

// commands serves the harness's requests.
func (r *reader) commands() {
	sc := bufio.NewScanner(r.conn)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 3)
		switch f[0] {
		case "print":
			if len(f) == 3 {
				ts := r.write([]byte(f[2] + "\r\n$ "))
				r.report("w %s %d", f[1], ts)
			}
		case "stream":
			d, _ := time.ParseDuration(f[1])
			r.job <- r.streamer(d)
		case "spin":
			d, _ := time.ParseDuration(f[1])
			r.job <- r.spinner(d)
		case "replay":
			if len(f) == 3 {
				frac, _ := strconv.ParseFloat(f[2], 64)
				r.job <- r.replay(f[1], frac)
			}
		case "quiet":
			r.job <- nil
		case "count":
			r.report("c %d %d", r.writes.Load(), r.bytes.Load())
		case "burst":
			if len(f) == 3 {
				r.burst(f[1], f[2])
			}
		}
	}
	os.Exit(0)
}

// burst prints N busy-looking lines INTERVAL apart, then an idle prompt, and reports the
// stamp of that last write.
func (r *reader) burst(tag, spec string) {
	var n int
	var every time.Duration
	if a, b, ok := strings.Cut(spec, " "); ok {
		n, _ = strconv.Atoi(a)
		every, _ = time.ParseDuration(b)
	}
	for i := 0; i < n; i++ {
		r.write([]byte(fmt.Sprintf("building step %d [####....] %d%%\r\n", i, i%100)))
		time.Sleep(every)
	}
	ts := r.write([]byte("done\r\n$ "))
	r.report("w %s %d", tag, ts)
}

// jobs runs one output job at a time: a new one (or quiet) stops the current one first.
func (r *reader) jobs() {
	var stop, done chan struct{}
	for f := range r.job {
		if stop != nil {
			close(stop)
			<-done
			stop, done = nil, nil
		}
		if f != nil {
			stop, done = make(chan struct{}), make(chan struct{})
			go func(stop, done chan struct{}) {
				defer close(done)
				f(stop)
			}(stop, done)
		}
	}
}

// every calls f every interval until stop.
func every(d time.Duration, stop <-chan struct{}, f func()) {
	if d <= 0 {
		return
	}
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			f()
		}
	}
}

// streamer prints one line every interval.
func (r *reader) streamer(d time.Duration) func(<-chan struct{}) {
	return func(stop <-chan struct{}) {
		line := 0
		every(d, stop, func() {
			line++
			r.write([]byte(fmt.Sprintf("stream line %08d the quick brown fox jumps over the lazy dog\r\n", line)))
		})
	}
}

// spinner redraws one status row every interval, as a working agent's CLI does: a CR,
// the next spinner frame, the elapsed seconds, and the rest of the row cleared.
func (r *reader) spinner(d time.Duration) func(<-chan struct{}) {
	frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
	return func(stop <-chan struct{}) {
		start, n := time.Now(), 0
		every(d, stop, func() {
			r.write([]byte(fmt.Sprintf("\r%c Working (%ds • esc to interrupt)\033[K", frames[n%len(frames)], int(time.Since(start).Seconds()))))
			n++
		})
	}
}

// replay writes a recorded output stream (package streamrec) at its recorded pace, in a
// loop, starting frac of the way into it.
func (r *reader) replay(path string, frac float64) func(<-chan struct{}) {
	return func(stop <-chan struct{}) {
		f, err := os.Open(path)
		if err != nil {
			r.report("e replay %d", 0)
			return
		}
		rec, err := streamrec.Parse(f)
		f.Close()
		if err != nil || len(rec.Events) == 0 {
			r.report("e replay %d", 0)
			return
		}
		length := rec.Events[len(rec.Events)-1].At + time.Second // a second's pause before each repeat
		offset := time.Duration(frac * float64(length))
		t := time.NewTimer(time.Hour)
		defer t.Stop()
		start := time.Now().Add(-offset)
		for {
			for _, ev := range rec.Events {
				if ev.Output == nil || ev.At < offset {
					continue
				}
				t.Reset(time.Until(start.Add(ev.At)))
				select {
				case <-stop:
					return
				case <-t.C:
				}
				r.write(ev.Output)
			}
			start, offset = start.Add(length), 0
		}
	}
}
