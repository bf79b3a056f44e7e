package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nudgehq/nudge/controlmode"
)

// bareClient runs in a child process (-bare-client): a controlmode.Conn attached to the
// benchmark's workspace session that only counts %output lines for d, then prints
// "lines bytes cpu-seconds switches" (its own utime+stime and voluntary context switches
// over the window: each is a sleep until tmux wrote more, so switches per line says how
// many lines a read brings). It is the "bare Go client decoding the same stream" the
// daemon's per-line cost is compared with.
func bareClient(tmux, sock, session string, d time.Duration) error {
	var lines, bytes atomic.Int64
	c, err := controlmode.Dial(context.Background(), controlmode.Config{Tmux: tmux, SocketName: sock, Session: session,
		OnOutput: func(_ int, data []byte, _ time.Duration) { lines.Add(1); bytes.Add(int64(len(data))) }})
	if err != nil {
		return err
	}
	defer c.Close()
	time.Sleep(time.Second) // attach and first redraw are not part of the window
	l0, b0, cpu0, sw0 := lines.Load(), bytes.Load(), selfCPU(), selfSwitches()
	time.Sleep(d)
	fmt.Printf("%d %d %.4f %d\n", lines.Load()-l0, bytes.Load()-b0, selfCPU()-cpu0, selfSwitches()-sw0)
	return nil
}

func selfCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// selfSwitches is the process's voluntary context switches so far.
func selfSwitches() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return int64(ru.Nvcsw)
}

// streamCost is the per-%output-line cost of the daemon beside a bare client and the tmux
// server, over one streaming window.
type streamCost struct {
	dur                      time.Duration
	lines, bytes             int64
	bareCPU                  float64 // seconds
	daemonCPU, serverCPU     float64 // seconds, same window (the server also feeds the bare client)
	daemonAlone, serverAlone float64 // % of a core, the streaming window without the bare client
}

// measureStreamCost runs the bare client for d while the streaming panes stream and
// reads the daemon's and the server's CPU over the same window.
func (b *bench) measureStreamCost(d time.Duration, alone window) (*streamCost, error) {
	e := b.e
	dp, sp := e.daemon.Process.Pid, e.serverPID()
	cmd := exec.Command(e.self, "-bare-client", e.tmux, e.tmuxSock, "agents_"+workspace, d.String())
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = dieWithHarness()
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bare client: %w", err)
	}
	time.Sleep(time.Second) // the child attaches for 1 s before its window starts
	d0, s0, start := cpuTicks(dp, false), cpuTicks(sp, false), time.Now()
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("bare client: %w", err)
	}
	el := time.Since(start)
	out := stdout.String()
	res := &streamCost{dur: el, daemonCPU: float64(cpuTicks(dp, false)-d0) / clockTicks,
		serverCPU: float64(cpuTicks(sp, false)-s0) / clockTicks, daemonAlone: alone.daemonPct, serverAlone: alone.serverPct}
	f := strings.Fields(string(out))
	if len(f) < 3 {
		return nil, fmt.Errorf("bare client said %q", out)
	}
	res.lines, _ = strconv.ParseInt(f[0], 10, 64)
	res.bytes, _ = strconv.ParseInt(f[1], 10, 64)
	res.bareCPU, _ = strconv.ParseFloat(f[2], 64)
	return res, nil
}

func (s *streamCost) print(w io.Writer) {
	if s.lines == 0 {
		io.WriteString(w, "Streaming cost: no %output lines in the window\n")
		return
	}
	secs := s.dur.Seconds()
	perLine := func(cpu float64) float64 { return cpu / float64(s.lines) * 1e6 }
	// The daemon's own cost per line is taken from the window without the bare client
	// attached (its % of a core × window ÷ lines in an equal window).
	daemonAlone := s.daemonAlone / 100 * secs
	serverAlone := s.serverAlone / 100 * secs
	fmt.Fprintf(w, "Streaming cost: %d %%output lines (%.0f/s, %.0f KB/s) over %.0f s, from the 10 streaming panes\n\n",
		s.lines, float64(s.lines)/secs, float64(s.bytes)/1e3/secs, secs)
	io.WriteString(w, "| who | CPU % of a core | µs per %output line |\n")
	fmt.Fprintln(w, "|---|---|---|")
	fmt.Fprintf(w, "| nudge daemon (streaming window, no bare client) | %.2f | %.1f |\n", s.daemonAlone, perLine(daemonAlone))
	fmt.Fprintf(w, "| tmux server (same window) | %.2f | %.1f |\n", s.serverAlone, perLine(serverAlone))
	fmt.Fprintf(w, "| bare Go control client (controlmode.Conn, counting only) | %.2f | %.1f |\n", s.bareCPU/secs*100, perLine(s.bareCPU))
	fmt.Fprintf(w, "| nudge daemon, while the bare client was attached | %.2f | %.1f |\n", s.daemonCPU/secs*100, perLine(s.daemonCPU))
	fmt.Fprintf(w, "| tmux server, feeding both clients | %.2f | %.1f |\n\n", s.serverCPU/secs*100, perLine(s.serverCPU))
	fmt.Fprintf(w, "daemon / tmux server (streaming window): %.2f (target ≤ 0.25)\n\n", s.daemonAlone/s.serverAlone)
}
