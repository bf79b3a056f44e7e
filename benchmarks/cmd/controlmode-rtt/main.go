// Command controlmode-rtt measures how long typing a prompt into a tmux pane takes
// through one persistent controlmode.Conn versus a `tmux send-keys` subprocess per
// prompt, in the same run, on a private tmux server.
//
//	go run ./benchmarks/cmd/controlmode-rtt [-n 1000] [-warmup 20] [-gap 5ms]
//
// The pane runs this same binary as a reader (-pane-reader): its tty in raw mode, it
// stamps CLOCK_MONOTONIC on every read(2) and reports each prompt's unique marker
// `<M########>` over a unix socket. A sample is the time from the moment the harness
// decides to type until the read that completed the 80-byte prompt ("app read"), plus
// the time until the trigger returned (the %end of send-keys, or the child's exit). The
// two paths alternate which goes first, with -gap idle between triggers.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nudgehq/nudge/controlmode"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

const promptLen = 80

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-pane-reader" {
		if err := paneReader(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "pane reader:", err)
			os.Exit(1)
		}
		return
	}
	n := flag.Int("n", 1000, "samples per path")
	warmup := flag.Int("warmup", 20, "warm-up samples per path, not counted")
	gap := flag.Duration("gap", 5*time.Millisecond, "idle time between triggers")
	tmux := flag.String("tmux", "tmux", "tmux binary")
	flag.Parse()
	if err := run(*tmux, *n, *warmup, *gap); err != nil {
		fmt.Fprintln(os.Stderr, "controlmode-rtt:", err)
		os.Exit(1)
	}
}

// mono is CLOCK_MONOTONIC in nanoseconds: comparable across processes, unlike Go's
// monotonic clock readings.
func mono() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// paneReader runs inside the pane: raw tty, stamp every read, report markers.
func paneReader(sock string) error {
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := term.MakeRaw(0); err != nil {
		return err
	}
	fmt.Fprintln(conn, "ready")
	buf := make([]byte, 64<<10)
	var acc []byte
	for {
		n, err := unix.Read(0, buf)
		ts := mono()
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return err
		}
		acc = append(acc, buf[:n]...)
		for {
			i := strings.Index(string(acc), "<M")
			if i < 0 || len(acc) < i+11 {
				break
			}
			if acc[i+10] == '>' {
				fmt.Fprintf(conn, "%s %d\n", acc[i:i+11], ts)
			}
			acc = acc[i+2:]
		}
		if len(acc) > 16 {
			acc = acc[len(acc)-16:]
		}
	}
}

type stamp struct {
	marker string
	ts     int64
}

// run starts a private tmux server whose pane runs the reader, measures both paths and
// prints the report.
func run(tmux string, n, warmup int, gap time.Duration) error {
	dir, err := os.MkdirTemp("", "controlmode-rtt")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "stamps.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	defer ln.Close()
	server := "nudge-bench-rtt-" + strconv.Itoa(os.Getpid())
	base := []string{"-L", server, "-f", "/dev/null"}
	if err := startReaderPane(tmux, base, sock); err != nil {
		return err
	}
	defer exec.Command(tmux, append(base, "kill-server")...).Run()

	stamps, err := acceptReader(ln)
	if err != nil {
		return err
	}
	ctx := context.Background()
	c, pane, err := dialControl(ctx, tmux, server)
	if err != nil {
		return err
	}
	defer c.Close()
	paths := [2]func(prompt string) error{
		func(prompt string) error { // through the control connection
			_, err := c.Do(ctx, controlmode.SendKeys(pane, prompt)[0])
			return err
		},
		func(prompt string) error { // a send-keys child
			return exec.Command(tmux, "-L", server, "send-keys", "-t", pane, "-l", "--", prompt).Run()
		},
	}
	res, err := measure(paths, stamps, n, warmup, gap)
	if err != nil {
		return err
	}
	report(tmux, n, warmup, gap, res)
	return nil
}

// startReaderPane starts the tmux server (base: its -L and -f) with one session whose
// pane runs this binary as the reader, reporting to sock.
func startReaderPane(tmux string, base []string, sock string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	newSession := append(base, "new-session", "-d", "-s", "rtt", "-x", "200", "-y", "50", exe,
		"-pane-reader", sock)
	if out, err := exec.Command(tmux, newSession...).CombinedOutput(); err != nil {
		return fmt.Errorf("new-session: %v: %s", err, out)
	}
	return nil
}

// dialControl opens a control connection to the session and returns it with the id of
// its pane. The caller closes it.
func dialControl(ctx context.Context, tmux, server string) (*controlmode.Conn, string, error) {
	c, err := controlmode.Dial(ctx, controlmode.Config{Tmux: tmux, SocketName: server, Session: "rtt"})
	if err != nil {
		return nil, "", err
	}
	r, err := c.Do(ctx, "display-message -p '#{pane_id}'")
	if err != nil {
		c.Close()
		return nil, "", err
	}
	return c, r.Lines[0], nil
}

// measure takes warmup+n samples of each path (0 control, 1 subprocess), alternating
// which goes first, with gap idle after each, and keeps the last n of each.
func measure(paths [2]func(prompt string) error, stamps <-chan stamp, n, warmup int, gap time.Duration) ([2]samples, error) {
	var res [2]samples
	seq := 0
	for i := 0; i < warmup+n; i++ {
		for k := 0; k < 2; k++ {
			path := (i + k) % 2 // alternate which path goes first
			seq++
			done, read, err := sample(paths[path], stamps, seq)
			if err != nil {
				return res, err
			}
			if i >= warmup {
				res[path].done = append(res[path].done, done)
				res[path].read = append(res[path].read, read)
			}
			time.Sleep(gap)
		}
	}
	return res, nil
}

type samples struct{ done, read []int64 }

// sample types one prompt and returns the time until the trigger returned and until the
// pane's program read the whole prompt, in ns.
func sample(trigger func(string) error, stamps <-chan stamp, seq int) (done, read int64, err error) {
	marker := fmt.Sprintf("<M%08d>", seq)
	prompt := strings.Repeat("p", promptLen-len(marker)) + marker
	t0 := mono()
	if err := trigger(prompt); err != nil {
		return 0, 0, fmt.Errorf("trigger %d: %w", seq, err)
	}
	done = mono() - t0
	timeout := time.After(10 * time.Second)
	for {
		select {
		case s, ok := <-stamps:
			if !ok {
				return 0, 0, fmt.Errorf("pane reader went away")
			}
			if s.marker == marker {
				return done, s.ts - t0, nil
			}
		case <-timeout:
			return 0, 0, fmt.Errorf("marker %s never read by the pane", marker)
		}
	}
}

// acceptReader waits for the pane reader and streams its stamps.
func acceptReader(ln net.Listener) (<-chan stamp, error) {
	ln.(*net.UnixListener).SetDeadline(time.Now().Add(20 * time.Second))
	conn, err := ln.Accept()
	if err != nil {
		return nil, fmt.Errorf("pane reader did not connect: %w", err)
	}
	sc := bufio.NewScanner(conn)
	if !sc.Scan() || sc.Text() != "ready" {
		return nil, fmt.Errorf("pane reader not ready: %v", sc.Err())
	}
	ch := make(chan stamp, 64)
	go func() {
		defer close(ch)
		for sc.Scan() {
			m, ts, _ := strings.Cut(sc.Text(), " ")
			v, _ := strconv.ParseInt(ts, 10, 64)
			ch <- stamp{m, v}
		}
	}()
	return ch, nil
}

func pct(sorted []int64, p float64) float64 {
	i := int(float64(len(sorted))*p+0.999999) - 1
	return float64(sorted[max(0, min(i, len(sorted)-1))]) / 1e3
}

func report(tmux string, n, warmup int, gap time.Duration, res [2]samples) {
	v, _ := exec.Command(tmux, "-V").Output()
	fmt.Printf("send-keys -l of an %d-byte prompt: %d samples per path after %d warm-up, gap %v, %s\n",
		promptLen, n, warmup, gap, strings.TrimSpace(string(v)))
	fmt.Printf("%-40s %8s %8s %8s %8s   (µs)\n", "path", "p50", "p95", "p99", "max")
	rows := []struct {
		name string
		s    []int64
	}{
		{"controlmode.Conn: %end (Do returned)", res[0].done},
		{"controlmode.Conn: app read", res[0].read},
		{"tmux send-keys child: exited", res[1].done},
		{"tmux send-keys child: app read", res[1].read},
	}
	for _, r := range rows {
		slices.Sort(r.s)
		fmt.Printf("%-40s %8.0f %8.0f %8.0f %8.0f\n", r.name, pct(r.s, .5), pct(r.s, .95), pct(r.s, .99),
			pct(r.s, 1))
	}
	fmt.Printf("ratio subprocess/control, app read: p50 %.1fx, p99 %.1fx; trigger done: p50 %.1fx\n",
		pct(res[1].read, .5)/pct(res[0].read, .5), pct(res[1].read, .99)/pct(res[0].read, .99),
		pct(res[1].done, .5)/pct(res[0].done, .5))
}
