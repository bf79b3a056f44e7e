package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The busy-fleet phase: 100 managed panes in a workspace of their own (fleetWorkspace),
// 20 for each of the five agent packs, each window as large as the recordings (80x24).
// Each workload runs for -fleet-window while the daemon's and the tmux server's CPU
// (utime+stime, /proc/PID/stat) are read over the same interval. The shell workloads run
// on a second fleet: 100 panes of the built-in `shell` profile running its own bash
// (what `nudge spawn --agent shell` starts), with shell loops typed into them, in a
// workspace of its own (shellWorkspace), spawned once the agent fleet is gone, so that
// the tmux server carries 100 panes in either.
const (
	fleetWorkspace = "fleet"
	shellWorkspace = "shells"
	fleetPanes     = 100
)

// fleetAgents are the five packs the recordings under detector/testdata/streams are of.
var fleetAgents = []string{"claude", "codex", "gemini", "opencode", "pi"}

// fleetWorkloads are the workloads in the order they run; -fleet-workloads selects.
// cmd is what pane i is told to run ("" = nothing): a reader command on the agent
// fleet, a shell command line typed into the pane's bash on the shell fleet.
var fleetWorkloads = []struct {
	name, desc string
	shell      bool // on the `--agent shell` fleet
	cmd        func(i int) string
}{
	{"idle", "100 panes idle", false, func(int) string { return "" }},
	{"spinner", "50 panes each redrawing a status row at 12.5 Hz", false, first(50, "spin 80ms")},
	{"replay", "100 panes replaying the five CLIs' recorded full turns at their pace", false, nil},
	{"lines", "10 panes each printing a 66-byte line every 10 ms", false, first(10, "stream 10ms")},
	{"shell-spinner", "`--agent shell` fleet, bash: 50 panes each redrawing a status row every 80 ms (`sleep 0.08`)", true, first(50, shellSpinner)},
	{"shell-lines", "`--agent shell` fleet, bash: 10 panes each printing a 66-byte line every 10 ms (`sleep 0.01`)", true, first(10, shellLines)},
}

// The shell workloads' loops, as a user's shell runs them: each step forks a sleep,
// so each pane's output comes at its own pace (a reader's timers, all on one clock,
// tend to print in step, and tmux then hands several panes' lines over in one read).
const (
	shellSpinner = `while :; do for f in ⠋ ⠙ ⠹ ⠸ ⠼ ⠴ ⠦ ⠧ ⠇ ⠏; do printf '\r%s Working (%ds • esc to interrupt)\033[K' $f $SECONDS; sleep 0.08; done; done`
	shellLines   = `while :; do echo 'build: compiling module 0123456789 abcdefghijklmnopqrstuvwxyz ok'; sleep 0.01; done`
)

// first returns a workload that runs cmd in the first n panes.
func first(n int, cmd string) func(int) string {
	return func(i int) string {
		if i < n {
			return cmd
		}
		return ""
	}
}

type fleetWindow struct {
	name, desc           string
	dur                  time.Duration
	daemonCPU, serverCPU float64 // seconds
	writes, bytes        int64   // the pane programs' writes to their ttys in the window
	writesAreLines       bool    // writes is the bare client's %output lines over its window (shells: no reader)
	readiness, runtime   int64   // readiness and runtime events in the window
	switches             int64   // the daemon's threads' context switches in the window
	bareCPU              float64 // seconds: a bare control client counting the same stream, over an equal window
	bareLines            int64
	bareSwitches         int64 // its voluntary context switches: one per sleep until tmux wrote more
	rssKB                int64
	load0, load1         string // /proc/loadavg's 1-minute figure at the start and the end
	profile              string // where the daemon's profiles of the window are, if any
}

type fleetResult struct {
	windows []fleetWindow
}

// spawnFleet spawns the 100 panes of the agent fleet (shell false) or of the shell fleet.
func (b *bench) spawnFleet(shell bool) ([]*bpane, error) {
	var ps []*bpane
	for i := 0; i < fleetPanes; i++ {
		var p *bpane
		var err error
		if shell {
			p, err = b.e.spawnArgv(shellWorkspace, fmt.Sprintf("s%03d", i), "shell", "", nil)
		} else {
			p, err = b.e.spawnOn(fleetWorkspace, fmt.Sprintf("f%03d", i), "fleet"+fleetAgents[i%len(fleetAgents)], "")
		}
		if err != nil {
			return nil, fmt.Errorf("spawn fleet pane %d: %w", i, err)
		}
		if out, err := exec.Command(b.e.tmux, "-L", b.e.tmuxSock, "resize-window", "-t", p.rt.PaneID, "-x", "80", "-y", "24").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("resize-window %s: %v: %s", p.rt.PaneID, err, out)
		}
		ps = append(ps, p)
	}
	time.Sleep(2 * time.Second)
	return ps, nil
}

// tell gives pane p a workload command: to its reader, or typed into its shell.
func (b *bench) tell(p *bpane, cmd string) error {
	if p.r != nil {
		return p.r.Send(cmd)
	}
	if out, err := exec.Command(b.e.tmux, "-L", b.e.tmuxSock, "send-keys", "-t", p.rt.PaneID, "-l", "--", cmd, ";",
		"send-keys", "-t", p.rt.PaneID, "Enter").CombinedOutput(); err != nil {
		return fmt.Errorf("send-keys %s: %v: %s", p.rt.PaneID, err, out)
	}
	return nil
}

// hush ends pane p's workload: its reader goes quiet, its shell gets C-c.
func (b *bench) hush(p *bpane) {
	if p.r != nil {
		p.r.Send("quiet")
		return
	}
	exec.Command(b.e.tmux, "-L", b.e.tmuxSock, "send-keys", "-t", p.rt.PaneID, "C-c").Run()
}

// stopFleet takes the fleet away: each runtime deregistered, then its pane killed (a
// stop would wait for each reader to ignore C-c for seconds).
func (b *bench) stopFleet(ps []*bpane) error {
	for _, p := range ps {
		if err := b.e.del("/v1/runtimes/" + p.rt.RuntimeID + "?reason=nudgebench"); err != nil {
			return err
		}
	}
	for _, p := range ps {
		if out, err := exec.Command(b.e.tmux, "-L", b.e.tmuxSock, "kill-pane", "-t", p.rt.PaneID).CombinedOutput(); err != nil {
			return fmt.Errorf("kill-pane %s: %v: %s", p.rt.PaneID, err, out)
		}
	}
	time.Sleep(2 * time.Second)
	return nil
}

// fleet runs the busy-fleet workloads.
func (b *bench) fleet() (*fleetResult, error) {
	streams, err := streamsDir()
	if err != nil {
		return nil, err
	}
	selected := func(name string) bool {
		return b.o.fleetWorkloads == "" || strings.Contains(","+b.o.fleetWorkloads+",", ","+name+",")
	}
	res := &fleetResult{}
	var ps []*bpane
	onShells := false
	for _, wl := range fleetWorkloads {
		if !selected(wl.name) {
			continue
		}
		if ps == nil || wl.shell != onShells {
			if ps != nil {
				if err := b.stopFleet(ps); err != nil {
					return nil, err
				}
			}
			if ps, err = b.spawnFleet(wl.shell); err != nil {
				return nil, err
			}
			onShells = wl.shell
		}
		for i, p := range ps {
			var cmd string
			if wl.cmd != nil {
				cmd = wl.cmd(i)
			} else { // replay
				agent := fleetAgents[i%len(fleetAgents)]
				frac := float64(i/len(fleetAgents)) / float64(fleetPanes/len(fleetAgents))
				cmd = fmt.Sprintf("replay %s %.3f", filepath.Join(streams, agent+"_fullturn.stream"), frac)
			}
			if cmd != "" {
				if err := b.tell(p, cmd); err != nil {
					return nil, err
				}
			}
		}
		time.Sleep(3 * time.Second) // past the first verdicts
		w, err := b.fleetWindow(wl.name, wl.desc, ps)
		if err != nil {
			return nil, err
		}
		if wl.name != "idle" {
			ws := fleetWorkspace
			if wl.shell {
				ws = shellWorkspace
			}
			if w.bareCPU, w.bareLines, w.bareSwitches, err = b.fleetBare(ws); err != nil {
				return nil, err
			}
			if w.writes == 0 { // shells have no reader to count: the %output lines instead
				w.writes, w.writesAreLines = w.bareLines, true
			}
		}
		res.windows = append(res.windows, w)
		for _, p := range ps {
			b.hush(p)
		}
		time.Sleep(2 * time.Second)
	}
	return res, nil
}

// fleetWindow measures one workload for -fleet-window.
func (b *bench) fleetWindow(name, desc string, ps []*bpane) (fleetWindow, error) {
	e := b.e
	w := fleetWindow{name: name, desc: desc, load0: loadavg()}
	w0, by0, err := paneWrites(ps)
	if err != nil {
		return w, err
	}
	dp, sp := e.daemon.Process.Pid, e.serverPID()
	ev0 := e.events.count()
	b.profileStart()
	c0 := ctxSwitches(dp)
	d0, s0, start := cpuTicks(dp, false), cpuTicks(sp, false), time.Now()
	time.Sleep(b.o.fleetWindow)
	d1, s1 := cpuTicks(dp, false), cpuTicks(sp, false)
	w.dur = time.Since(start)
	w.switches = ctxSwitches(dp) - c0
	ev1 := e.events.count()
	w.readiness, w.runtime = ev1["readiness"]-ev0["readiness"], ev1["runtime"]-ev0["runtime"]
	for k, n := range ev1 {
		if strings.HasPrefix(k, "readiness ") && n > ev0[k] {
			fmt.Fprintf(os.Stderr, "fleet %s: %s events: %d\n", name, k, n-ev0[k])
		}
	}
	w.profile = b.profileStop("fleet-" + name)
	w1, by1, err := paneWrites(ps)
	if err != nil {
		return w, err
	}
	w.daemonCPU, w.serverCPU = float64(d1-d0)/clockTicks, float64(s1-s0)/clockTicks
	w.writes, w.bytes = w1-w0, by1-by0
	w.rssKB = status(dp, "VmRSS")
	w.load1 = loadavg()
	return w, nil
}

// fleetBare runs a bare control client (-bare-client) on the fleet's session for an
// equal window: what decoding the same stream costs a Go client that does nothing else.
func (b *bench) fleetBare(ws string) (cpu float64, lines, switches int64, err error) {
	e := b.e
	cmd := exec.Command(e.self, "-bare-client", e.tmux, e.tmuxSock, "agents_"+ws, b.o.fleetWindow.String())
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = dieWithHarness()
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("bare client: %w", err)
	}
	f := strings.Fields(string(out))
	if len(f) != 4 {
		return 0, 0, 0, fmt.Errorf("bare client said %q", out)
	}
	lines, _ = strconv.ParseInt(f[0], 10, 64)
	cpu, _ = strconv.ParseFloat(f[2], 64)
	switches, _ = strconv.ParseInt(f[3], 10, 64)
	return cpu, lines, switches, nil
}

// profileStart starts a profile window of the daemon (-profile-windows).
func (b *bench) profileStart() {
	if b.o.profileWindows != "" {
		b.e.daemon.Process.Signal(syscall.SIGUSR1)
	}
}

// profileStop ends it and renames its files to DIR/name.*; it returns DIR/name, or "".
func (b *bench) profileStop(name string) string {
	if b.o.profileWindows == "" {
		return ""
	}
	b.e.daemon.Process.Signal(syscall.SIGUSR2)
	time.Sleep(500 * time.Millisecond) // the daemon writes the profiles
	base := filepath.Join(b.o.profileWindows, name)
	for _, f := range []string{"cpu.prof", "allocs.base", "allocs.prof"} {
		os.Rename(filepath.Join(b.o.profileWindows, f), base+"."+f)
	}
	return base
}

// paneWrites sums the writes and bytes the pane programs have written to their ttys.
func paneWrites(ps []*bpane) (writes, bytes int64, err error) {
	for _, p := range ps {
		if p.r == nil {
			continue
		}
		p.r.Drain()
		if err := p.r.Send("count"); err != nil {
			return 0, 0, err
		}
		s, err := p.r.Await("c", "", 5*time.Second)
		if err != nil {
			return 0, 0, err
		}
		n, _ := strconv.ParseInt(s.Tag, 10, 64)
		writes += n
		bytes += s.TS
	}
	return writes, bytes, nil
}

// ctxSwitches sums the voluntary and involuntary context switches of pid's threads.
func ctxSwitches(pid int) int64 {
	dirs, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var n int64
	for _, d := range dirs {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, d.Name()))
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += c
			}
		}
	}
	return n
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

// streamsDir is detector/testdata/streams of the module the harness is run from.
func streamsDir() (string, error) {
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	m := strings.TrimSpace(string(mod))
	if err != nil || m == "" || m == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: run nudgebench from inside the nudge module for the fleet phase's recordings: %v", err)
	}
	dir := filepath.Join(filepath.Dir(m), "detector", "testdata", "streams")
	if _, err := os.Stat(filepath.Join(dir, "codex_fullturn.stream")); err != nil {
		return "", err
	}
	return dir, nil
}

func (r *fleetResult) print(w io.Writer) {
	fmt.Fprintln(w, "Busy fleet: 100 managed panes (20 per agent pack, 80x24; the shell rows: 100 `--agent shell` panes running bash instead), daemon and tmux server CPU (utime+stime) in the same window")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | s | pane writes/s | KB/s | readiness changes/s | daemon CPU % | tmux server CPU % | daemon / tmux | daemon µs per write | daemon context switches per write | bare client CPU % | bare client / tmux | bare client sleeps per output line | daemon RSS MB | load avg |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, x := range r.windows {
		secs := x.dur.Seconds()
		ratio, per, sw, bare, bareRatio, bareSleeps := "—", "—", "—", "—", "—", "—"
		if x.bareLines > 0 {
			bareSleeps = fmt.Sprintf("%.2f", float64(x.bareSwitches)/float64(x.bareLines))
			bare = fmt.Sprintf("%.2f", x.bareCPU/secs*100)
			if x.serverCPU > 0 {
				bareRatio = fmt.Sprintf("%.2f", x.bareCPU/x.serverCPU)
			}
		}
		if x.serverCPU > 0 {
			ratio = fmt.Sprintf("%.2f", x.daemonCPU/x.serverCPU)
		}
		if x.writes > 0 {
			per = fmt.Sprintf("%.1f", x.daemonCPU/float64(x.writes)*1e6)
			sw = fmt.Sprintf("%.2f", float64(x.switches)/float64(x.writes))
		}
		writes := fmt.Sprintf("%.0f", float64(x.writes)/secs)
		kb := fmt.Sprintf("%.1f", float64(x.bytes)/1e3/secs)
		if x.writesAreLines {
			writes, kb = "≈"+writes+" (%output lines)", "—"
		}
		fmt.Fprintf(w, "| %s | %.0f | %s | %s | %.1f | %.2f | %.2f | %s | %s | %s | %s | %s | %s | %.1f | %s → %s |\n", x.desc, secs,
			writes, kb, float64(x.readiness)/secs, x.daemonCPU/secs*100, x.serverCPU/secs*100,
			ratio, per, sw, bare, bareRatio, bareSleeps, float64(x.rssKB)/1024, x.load0, x.load1)
	}
	fmt.Fprintln(w)
	for _, x := range r.windows {
		if x.profile != "" {
			fmt.Fprintf(w, "profiles of %q: %s.cpu.prof, %s.allocs.prof (-diff_base %s.allocs.base)\n", x.name, x.profile, x.profile, x.profile)
		}
	}
	fmt.Fprintln(w, "target: daemon / tmux ≤ 0.25 in each busy workload")
	fmt.Fprintln(w)
}
