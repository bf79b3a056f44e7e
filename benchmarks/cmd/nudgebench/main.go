// Command nudgebench measures nudge end to end against the subprocess tools it replaces
// and prints one table. It is run by hand, never in CI:
//
//	go run ./benchmarks/cmd/nudgebench [-phases trigger,fanout,detect,scale,fleet,throughput,host,soak] [-n 2000]
//
// It builds ./cmd/nudge (or uses -nudge), runs `nudge serve` on a private tmux server
// (tmux -L nudgebench-PID, -f /dev/null) with a fresh state dir, and spawns managed runtimes
// through the API whose panes run this binary as a reader (-pane-reader): raw tty, a
// CLOCK_MONOTONIC stamp on every read(2), echo (see benchmarks/internal/panereader).
// benchmarks/README.md explains every column.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nudgehq/nudge/benchmarks/internal/panereader"
)

type options struct {
	phases         string
	n, warmup      int
	paneCounts     []int
	gap            time.Duration
	streamEvery    time.Duration
	idle, stream   time.Duration
	detectN        int
	tmux, nudge    string
	cpuprofile     string
	trace          string
	submitQuiet    time.Duration
	echoTimeout    time.Duration
	submitTimeout  time.Duration
	throughputMB   int
	width          int
	fanoutPanes    int
	fanoutRounds   int
	hostN          int
	fleetWindow    time.Duration
	fleetWorkloads string
	profileWindows string
	daemonProcs    int
	sshConfig      string // set by the host phase: its loopback sshd's client config
	serveArgs      string // more `nudge serve` flags, space-separated (e.g. "--retain 1m --retain-every 10s")
	quiet          time.Duration
	soakN          int
	soakPanes      int
	soakEvery      int
	soakBacklog    int
	soakQuiet      time.Duration
}

func main() {
	if len(os.Args) == 4 && os.Args[1] == "-pane-reader" {
		if err := panereader.Run(os.Args[2], panereader.Options{Name: os.Args[3], Echo: true}); err != nil {
			fmt.Fprintln(os.Stderr, "pane reader:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 6 && os.Args[1] == "-bare-client" {
		d, err := time.ParseDuration(os.Args[5])
		if err == nil {
			err = bareClient(os.Args[2], os.Args[3], os.Args[4], d)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bare client:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	var panes string
	flag.StringVar(&o.phases, "phases", "trigger,fanout,detect,scale,fleet,throughput", "phases to run")
	flag.IntVar(&o.n, "n", 2000, "triggers per pane count and path")
	flag.IntVar(&o.warmup, "warmup", 20, "warm-up triggers per pane count, not counted")
	flag.StringVar(&panes, "panes", "1,10,100", "managed pane counts for the trigger phase")
	flag.DurationVar(&o.gap, "gap", 5*time.Millisecond, "idle time before each trigger")
	flag.DurationVar(&o.streamEvery, "stream-every", 10*time.Millisecond, "a streaming pane prints a line this often")
	flag.DurationVar(&o.idle, "idle", 60*time.Second, "scale phase: idle window")
	flag.DurationVar(&o.stream, "stream", 60*time.Second, "scale phase: streaming window (and poller windows)")
	flag.IntVar(&o.detectN, "detect-n", 30, "samples per detection row")
	flag.StringVar(&o.tmux, "tmux", "tmux", "tmux binary")
	flag.StringVar(&o.nudge, "nudge", "", "nudge binary (default: go build ./cmd/nudge into a temp dir)")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "pass --cpuprofile FILE to nudge serve")
	flag.StringVar(&o.trace, "trace", "", "pass --trace FILE to nudge serve (execution trace; go tool trace)")
	flag.DurationVar(&o.submitQuiet, "submit-quiet", 2*time.Millisecond, "nudge serve --submit-quiet")
	flag.DurationVar(&o.echoTimeout, "echo-timeout", 200*time.Millisecond, "nudge serve --echo-timeout")
	flag.DurationVar(&o.submitTimeout, "submit-timeout", 50*time.Millisecond, "nudge serve --submit-timeout")
	flag.IntVar(&o.throughputMB, "throughput-mb", 200, "throughput phase: MB the pane writes")
	flag.IntVar(&o.width, "width", 400, "tmux default-size width (80 = tmux's default)")
	flag.IntVar(&o.fanoutPanes, "fanout-panes", 100, "fan-out phase: panes that each get one prompt at once")
	flag.IntVar(&o.fanoutRounds, "fanout-rounds", 10, "fan-out phase: rounds per path")
	flag.DurationVar(&o.fleetWindow, "fleet-window", 30*time.Second, "fleet phase: measured window per workload")
	flag.StringVar(&o.fleetWorkloads, "fleet-workloads", "", "fleet phase: workloads to run (idle,spinner,replay,lines,shell-spinner,shell-lines; default all)")
	flag.StringVar(&o.profileWindows, "profile-windows", "", "folder: profile the daemon (CPU, allocations) during each fleet window (nudge serve --profile-windows)")
	flag.StringVar(&o.serveArgs, "serve-args", "", "more nudge serve flags, space-separated (e.g. \"--retain 1m --retain-every 10s\")")
	flag.DurationVar(&o.quiet, "quiet", 15*time.Second, "trigger phase: quiet time after each pane count before the store size and the daemon's RSS are read again")
	flag.IntVar(&o.daemonProcs, "daemon-gomaxprocs", 0, "GOMAXPROCS of the daemon (0: the Go default)")
	flag.IntVar(&o.hostN, "host-n", 200, "host phase (not in the default phases; needs sshd): triggers per path")
	flag.IntVar(&o.soakN, "soak-n", 100000, "soak phase (not in the default phases): triggers in all")
	flag.IntVar(&o.soakPanes, "soak-panes", 20, "soak phase: plain panes the triggers go to, round-robin")
	flag.IntVar(&o.soakEvery, "soak-every", 10000, "soak phase: a row (store, RSS, accept, rate) every this many triggers")
	flag.IntVar(&o.soakBacklog, "soak-backlog", 200, "soak phase: at most this many triggers open (sent, not closed) at once")
	flag.DurationVar(&o.soakQuiet, "soak-quiet", time.Minute, "soak phase: quiet time before each row's RSS is read (the store's idle release is at 10 s)")
	flag.Parse()
	for _, s := range strings.Split(panes, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v <= 0 {
			fmt.Fprintln(os.Stderr, "nudgebench: bad -panes", panes)
			os.Exit(2)
		}
		o.paneCounts = append(o.paneCounts, v)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "nudgebench:", err)
		os.Exit(1)
	}
}

// bench is one run's state.
type bench struct {
	o     options
	e     *env
	panes []*bpane
	seq   int
	final map[string]<-chan struct{}
	raw   *rawClient // the trigger phase's API connection
	floor *floor     // the bare control client (the floor path)
}

// run runs the phases o asks for against a fresh daemon and prints the report.
func run(o options) error {
	var sshd *loopSSHD
	if o.phase("host") {
		var err error
		if sshd, err = startLoopSSHD(); err != nil {
			return err
		}
		defer sshd.close()
		o.sshConfig = sshd.config
	}
	e, err := newEnv(o)
	if err != nil {
		return err
	}
	defer e.close()
	closeOnSignal(e)
	b := &bench{o: o, e: e, final: map[string]<-chan struct{}{}}
	if b.floor, err = dialFloor(e); err != nil {
		return err
	}
	defer b.floor.close()
	rep := newReport(o, e)
	if err := b.runPhases(rep, sshd); err != nil {
		return err
	}
	rep.print(os.Stdout)
	return nil
}

// phase reports whether -phases names the phase.
func (o options) phase(name string) bool {
	return strings.Contains(","+o.phases+",", ","+name+",")
}

// closeOnSignal closes e (its daemon, its tmux server) and exits when the harness is
// interrupted, so an interrupted run leaves nothing behind.
func closeOnSignal(e *env) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	go func() {
		<-sig
		e.close()
		os.Exit(130)
	}()
}

// runPhases runs the phases -phases names, in their fixed order, into rep.
func (b *bench) runPhases(rep *report, sshd *loopSSHD) error {
	o := b.o
	var err error
	if o.phase("trigger") {
		if err := b.triggerPhase(rep); err != nil {
			return err
		}
	}
	if o.phase("fanout") {
		if rep.fanout, err = b.fanout(o.fanoutPanes, o.fanoutRounds); err != nil {
			return fmt.Errorf("fan-out: %w", err)
		}
	}
	if o.phase("detect") {
		if rep.detect, err = b.detection(o.detectN); err != nil {
			return fmt.Errorf("detection: %w", err)
		}
	}
	if o.phase("scale") {
		if rep.scale, err = b.scale(); err != nil {
			return fmt.Errorf("scale: %w", err)
		}
	}
	if o.phase("fleet") {
		if rep.fleet, err = b.fleet(); err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
	}
	if o.phase("host") {
		if rep.host, err = b.hostLatency(sshd, o.hostN, o.warmup); err != nil {
			return fmt.Errorf("host: %w", err)
		}
	}
	if o.phase("soak") {
		if rep.soak, err = b.soak(); err != nil {
			if rep.soak != nil {
				rep.soak.print(os.Stderr, o)
			}
			return fmt.Errorf("soak: %w", err)
		}
	}
	if o.phase("throughput") {
		if rep.throughput, err = b.throughput(); err != nil {
			return fmt.Errorf("throughput: %w", err)
		}
	}
	return nil
}

// triggerPhase measures trigger latency at each -panes count, each in a profile window.
func (b *bench) triggerPhase(rep *report) error {
	for _, n := range b.o.paneCounts {
		start := time.Now()
		b.profileStart()
		r, err := b.triggerLatency(n, b.o.n, b.o.warmup)
		b.profileStop(fmt.Sprintf("trigger-%d", n))
		if err != nil {
			return fmt.Errorf("trigger latency at %d panes: %w", n, err)
		}
		rep.trigger = append(rep.trigger, r)
		fmt.Fprintf(os.Stderr, "trigger latency at %d panes: %v\n", n, time.Since(start).Round(time.Second))
		b.storeAndRSS(n)
	}
	return nil
}

// storeAndRSS prints (to stderr) the store file's size and the daemon's RSS right after a
// pane count's triggers and again after -quiet (the store's idle release is at 10 s).
func (b *bench) storeAndRSS(panes int) {
	pid := b.e.daemon.Process.Pid
	size := func() float64 {
		fi, err := os.Stat(filepath.Join(b.e.dir, "state", "nudge.db"))
		if err != nil {
			return 0
		}
		return float64(fi.Size()) / (1 << 20)
	}
	busy, busyRSS := size(), float64(status(pid, "VmRSS"))/1024
	time.Sleep(b.o.quiet)
	fmt.Fprintf(os.Stderr, "after %d panes (%d prompts sent so far, both paths): store %.1f MB, daemon RSS %.1f MB; after %s quiet: store %.1f MB, RSS %.1f MB\n",
		panes, b.seq, busy, busyRSS, b.o.quiet, size(), float64(status(pid, "VmRSS"))/1024)
}
