package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const clockTicks = 100 // USER_HZ

// cpuTicks is utime+stime of pid (with its reaped children if children).
func cpuTicks(pid int, children bool) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	var t int64
	n := 2
	if children {
		n = 4
	}
	for i := 0; i < n; i++ { // fields 14..17: utime stime cutime cstime
		v, _ := strconv.ParseInt(f[11+i], 10, 64)
		t += v
	}
	return t
}

// status returns a /proc/PID/status field in kB.
func status(pid int, key string) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == key {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return 0
}

// processes is the system-wide fork counter of /proc/stat.
func processes() int64 {
	b, _ := os.ReadFile("/proc/stat")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "processes "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

func (e *env) tmuxForks() int {
	b, _ := os.ReadFile(e.tmuxLog)
	return bytes.Count(b, []byte("\n"))
}

func (e *env) controlDials() int {
	b, _ := os.ReadFile(e.tmuxLog)
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "-C") {
			n++
		}
	}
	return n
}

func (e *env) serverPID() int {
	out, _ := exec.Command(e.tmux, "-L", e.tmuxSock, "display-message", "-p", "-t", "nbhold", "#{pid}").Output()
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return n
}

// window is what one measured interval cost.
type window struct {
	name                          string
	dur                           time.Duration
	daemonPct, serverPct, pollPct float64
	rssKB, hwmKB                  int64
	forks, sysForks               int64
	outputBytes                   int64
}

// measure runs during for d and returns the costs in that interval.
func (b *bench) measure(name string, d time.Duration, during func(stop <-chan struct{})) window {
	e := b.e
	dp, sp := e.daemon.Process.Pid, e.serverPID()
	d0, s0, f0, p0 := cpuTicks(dp, false), cpuTicks(sp, false), e.tmuxForks(), processes()
	var ru0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru0)
	start := time.Now()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		if during != nil {
			during(stop)
		}
		close(done)
	}()
	time.Sleep(d)
	close(stop)
	<-done
	el := time.Since(start)
	var ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru1)
	pct := func(ticks int64) float64 { return float64(ticks) / clockTicks / el.Seconds() * 100 }
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	child := tv(ru1.Utime) + tv(ru1.Stime) - tv(ru0.Utime) - tv(ru0.Stime)
	return window{name: name, dur: el,
		daemonPct: pct(cpuTicks(dp, false) - d0), serverPct: pct(cpuTicks(sp, false) - s0),
		pollPct: child / el.Seconds() * 100,
		rssKB:   status(dp, "VmRSS"), hwmKB: status(dp, "VmHWM"),
		forks: int64(e.tmuxForks() - f0), sysForks: processes() - p0}
}

type scaleResult struct {
	windows []window
	dials   int
	cost    *streamCost
}

// scale: 100 managed panes idle, then 10 of them streaming, then the same with a
// capture-pane subprocess poller over all 100 panes every 1 s.
func (b *bench) scale() (*scaleResult, error) {
	if err := b.grow(100); err != nil {
		return nil, err
	}
	setStream := func(on bool) {
		for _, p := range b.panes[:100] {
			if p.streaming {
				if on {
					p.r.Send("stream " + b.o.streamEvery.String())
				} else {
					p.r.Send("quiet")
				}
			}
		}
	}
	res := &scaleResult{}
	setStream(false)
	time.Sleep(2 * time.Second)
	res.windows = append(res.windows, b.measure("100 panes idle", b.o.idle, nil))
	setStream(true)
	time.Sleep(2 * time.Second)
	res.windows = append(res.windows, b.measure("100 panes, 10 streaming", b.o.stream, nil))
	var err error
	if res.cost, err = b.measureStreamCost(b.o.stream, res.windows[len(res.windows)-1]); err != nil {
		return nil, err
	}
	res.windows = append(res.windows, b.measure("100 panes, 10 streaming, + capture-pane poller 1 s", b.o.stream, func(stop <-chan struct{}) {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			for _, p := range b.panes[:100] {
				exec.Command(b.e.tmux, "-L", b.e.tmuxSock, "capture-pane", "-p", "-t", p.rt.PaneID).Run()
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}))
	res.dials = b.e.controlDials()
	return res, nil
}

func (s *scaleResult) print(w io.Writer) {
	fmt.Fprintln(w, "Scale: CPU in % of one core over the window, RSS in MB")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| window | s | daemon CPU % | daemon RSS (peak) | daemon tmux forks/s | system forks/s | tmux server CPU % | poller children CPU % |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, x := range s.windows {
		fmt.Fprintf(w, "| %s | %.0f | %.2f | %.1f (%.1f) | %.2f | %.1f | %.2f | %.2f |\n", x.name, x.dur.Seconds(), x.daemonPct,
			float64(x.rssKB)/1024, float64(x.hwmKB)/1024, float64(x.forks)/x.dur.Seconds(), float64(x.sysForks)/x.dur.Seconds(),
			x.serverPct, x.pollPct)
	}
	fmt.Fprintf(w, "\ncontrol-mode dials (tmux -C) by the daemon over the whole run: %d\n\n", s.dials)
	if s.cost != nil {
		s.cost.print(w)
	}
}

type throughputResult struct {
	bytes                   int64
	dur                     time.Duration
	daemonCPU, serverCPU    float64 // seconds
	dialsBefore, dialsAfter int
	logHits                 []string
}

// throughput: one managed pane writes -throughput-mb MB as fast as it can.
func (b *bench) throughput() (*throughputResult, error) {
	e := b.e
	for _, p := range b.panes {
		if p.streaming {
			p.r.Send("quiet")
		}
	}
	fifo := e.dir + "/go"
	done := e.dir + "/done"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return nil, err
	}
	n := int64(b.o.throughputMB) * 1000 * 1000
	script := fmt.Sprintf("read x < %s; yes 0123456789abcdef | head -c %d; : > %s; exec sleep 1000000", fifo, n, done)
	if _, err := e.post("/v1/runtimes", map[string]any{"workspace": workspace, "role": "tput", "agent": "bench", "dir": e.dir,
		"argv": []string{"sh", "-c", script}}); err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second)
	res := &throughputResult{bytes: n, dialsBefore: e.controlDials()}
	dp, sp := e.daemon.Process.Pid, e.serverPID()
	d0, s0 := cpuTicks(dp, false), cpuTicks(sp, false)
	start := time.Now()
	if err := os.WriteFile(fifo, []byte("go\n"), 0o600); err != nil {
		return nil, err
	}
	for {
		if _, err := os.Stat(done); err == nil {
			break
		}
		if time.Since(start) > 10*time.Minute {
			return nil, fmt.Errorf("throughput pane did not finish in 10 minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
	res.dur = time.Since(start)
	res.daemonCPU = float64(cpuTicks(dp, false)-d0) / clockTicks
	res.serverCPU = float64(cpuTicks(sp, false)-s0) / clockTicks
	time.Sleep(2 * time.Second)
	res.dialsAfter = e.controlDials()
	logb, _ := os.ReadFile(e.daemonLog)
	for _, l := range strings.Split(string(logb), "\n") {
		if strings.Contains(l, "too far behind") || strings.Contains(l, "control connection") || strings.Contains(l, "%exit") {
			res.logHits = append(res.logHits, l)
		}
	}
	return res, nil
}

func (t *throughputResult) print(w io.Writer) {
	fmt.Fprintln(w, "Throughput: one managed pane writes as fast as it can")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| MB | s | MB/s | daemon CPU-s | tmux server CPU-s | daemon/server | control dials before → after | daemon log lines about the control connection |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	fmt.Fprintf(w, "| %d | %.1f | %.1f | %.2f | %.2f | %.2f | %d → %d | %d |\n\n", t.bytes/1e6, t.dur.Seconds(),
		float64(t.bytes)/1e6/t.dur.Seconds(), t.daemonCPU, t.serverCPU, t.daemonCPU/t.serverCPU, t.dialsBefore, t.dialsAfter, len(t.logHits))
	for _, l := range t.logHits {
		fmt.Fprintln(w, "    "+l)
	}
}
