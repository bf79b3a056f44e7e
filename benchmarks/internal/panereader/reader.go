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
// line every interval ("stream 10ms" / "quiet"), or to print a burst of busy lines then a
// prompt ("burst TAG N INTERVAL", answered with the stamp of the last write).
package panereader

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
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
	cmu    sync.Mutex // conn writes
	out    sync.Mutex // tty writes
	stream chan time.Duration
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
	r := &reader{opt: opt, conn: conn, stream: make(chan time.Duration, 1)}
	r.report("hello %s %d", opt.Name, os.Getpid())
	if opt.Echo {
		r.write([]byte("$ "))
	}
	go r.commands()
	go r.streamer()
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
			r.stream <- d
		case "quiet":
			r.stream <- 0
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

// streamer prints one line every interval while streaming is on.
func (r *reader) streamer() {
	var tick *time.Ticker
	var c <-chan time.Time
	line := 0
	for {
		select {
		case d := <-r.stream:
			if tick != nil {
				tick.Stop()
				tick, c = nil, nil
			}
			if d > 0 {
				tick = time.NewTicker(d)
				c = tick.C
			}
		case <-c:
			line++
			r.write([]byte(fmt.Sprintf("stream line %08d the quick brown fox jumps over the lazy dog\r\n", line)))
		}
	}
}
