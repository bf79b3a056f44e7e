package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nudgehq/nudge/benchmarks/internal/panereader"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/inject"
)

// fanoutResult is the broadcast phase: one prompt to each of n idle panes at once. Times
// are ns from the first request (or write, or fork) to the last pane's read, per round.
type fanoutResult struct {
	panes                 int
	nudgeFirst, nudgeLast []int64 // first request → first / last pane read its marker
	nudgeSubmitted        []int64 // first request → last receipt submitted (event seen)
	floorFirst, floorLast []int64 // floor: one control-mode write per pane, all at once
	subFirst, subLast     []int64 // children: 100 send-keys pairs, one pane after another

	// CPU (ns, from schedstat) from the start to the last pane's read, per round: the
	// tmux server's for each path, and the daemon's for nudge's.
	nudgeServerCPU, nudgeDaemonCPU, floorServerCPU []int64
	// The same from the start to the last receipt submitted (nudge's whole delivery).
	nudgeServerAll, nudgeDaemonAll []int64

	load []string // /proc/loadavg's 1-minute figure at each round's start
}

// fanoutWorkspace holds the fan-out's panes: spawned for the phase, so its first round
// is the first trigger each pane ever gets (cold), whatever phases ran before.
const fanoutWorkspace = "fanout"

// fanout runs rounds broadcasts over n panes of their own, all quiet. Round 1 is cold:
// every pane's first trigger (what a user's first broadcast to a new fleet meets); the
// later rounds are warm.
func (b *bench) fanout(n, rounds int) (*fanoutResult, error) {
	var targets []*bpane
	for i := 0; i < n; i++ {
		p, err := b.e.spawnOn(fanoutWorkspace, fmt.Sprintf("o%03d", i), "bench", "")
		if err != nil {
			return nil, fmt.Errorf("spawn fan-out pane %d: %w", i, err)
		}
		targets = append(targets, p)
	}
	time.Sleep(time.Second) // every new pane's first readiness look is done
	conns := make([]*rawClient, n)
	for i := range conns {
		c, err := dialRaw(b.e.apiSock)
		if err != nil {
			return nil, err
		}
		defer c.close()
		conns[i] = c
	}
	res := &fanoutResult{panes: n}
	for r := 0; r < rounds; r++ {
		for i, path := range []func([]*bpane, []*rawClient, *fanoutResult) error{b.fanNudge, b.fanFloor, b.fanChildren} {
			if err := b.settle(targets); err != nil {
				return nil, err
			}
			if i == 1 { // the nudge path's window: its delivery and the readiness look after it
				b.profileStop(fmt.Sprintf("fanout-%d", r))
			}
			if i == 0 {
				res.load = append(res.load, loadavg())
				b.profileStart()
			}
			if err := path(targets, conns, res); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// settle waits until every target's previous nudge trigger is final, drops old stamps,
// and lets the panes be quiet for longer than the bench profile's ready_quiet (300 ms),
// so that the daemon's readiness look at each pane after the previous path's output (a
// capture and its parse per pane, ~1 ms of CPU) is done before the next path starts:
// the paths are measured from idle panes, not on top of each other's aftermath.
func (b *bench) settle(targets []*bpane) error {
	var scratch triggerResult
	for _, p := range targets {
		if err := b.waitLane(p, &scratch); err != nil {
			return err
		}
		p.r.Drain()
	}
	time.Sleep(fanoutQuiet)
	return nil
}

// fanoutQuiet is the idle time before each fan-out path: the bench profile's
// ready_quiet (300 ms) and a margin.
const fanoutQuiet = 450 * time.Millisecond

// awaitAll waits for each pane's marker and Enter and returns the earliest and latest
// marker stamps.
func awaitAll(targets []*bpane, markers []string) (first, last int64, err error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	first = 1<<63 - 1
	for i, p := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, e := p.r.Await("m", markers[i], 20*time.Second)
			if e == nil {
				_, e = p.r.Await("enter", "", 20*time.Second)
			}
			mu.Lock()
			defer mu.Unlock()
			if e != nil && err == nil {
				err = e
			}
			first, last = min(first, m.TS), max(last, m.TS)
		}()
	}
	wg.Wait()
	return first, last, err
}

// fanNudge: one POST /v1/triggers per pane, each on its own API connection, all
// written at once; then the receipts until every one is submitted.
func (b *bench) fanNudge(targets []*bpane, conns []*rawClient, res *fanoutResult) error {
	reqs, markers, ids := b.fanRequests(targets)
	evs, cancel := b.e.events.watch(func(ev *event) bool {
		return ev.Type == "trigger" && ids[ev.tr.TriggerID] && (ev.tr.State == "submitted" || ev.tr.State == "acked")
	})
	defer cancel()
	start := make(chan struct{})
	posted := postAll(conns, reqs, start)
	time.Sleep(20 * time.Millisecond) // every writer is parked on start
	sp, dp := b.e.serverPID(), b.e.daemon.Process.Pid
	s0, d0 := runNS(sp), runNS(dp)
	t0 := panereader.Mono()
	close(start)
	first, last, err := awaitAll(targets, markers)
	s1, d1 := runNS(sp), runNS(dp)
	if e := posted(); e != nil {
		return e
	}
	if err != nil {
		return fmt.Errorf("nudge fan-out: %w", err)
	}
	lastSub, err := awaitSubmitted(evs, len(targets))
	if err != nil {
		return err
	}
	s2, d2 := runNS(sp), runNS(dp)
	res.nudgeServerAll = append(res.nudgeServerAll, s2-s0)
	res.nudgeDaemonAll = append(res.nudgeDaemonAll, d2-d0)
	res.nudgeFirst = append(res.nudgeFirst, first-t0)
	res.nudgeLast = append(res.nudgeLast, last-t0)
	res.nudgeSubmitted = append(res.nudgeSubmitted, lastSub-t0)
	res.nudgeServerCPU = append(res.nudgeServerCPU, s1-s0)
	res.nudgeDaemonCPU = append(res.nudgeDaemonCPU, d1-d0)
	return nil
}

// fanRequests builds one trigger request per target, each with the next prompt, and
// expects each trigger to become final. It returns the requests, each target's marker
// and the set of trigger ids.
func (b *bench) fanRequests(targets []*bpane) (reqs [][]byte, markers []string, ids map[string]bool) {
	reqs = make([][]byte, len(targets))
	markers = make([]string, len(targets))
	ids = map[string]bool{}
	for i, p := range targets {
		marker, body := b.nextPrompt()
		id := fmt.Sprintf("nb%d", b.seq)
		b.final[id] = b.e.events.expectFinal(id)
		p.last, markers[i], ids[id] = id, marker, true
		js, _ := json.Marshal(map[string]any{"trigger_id": id, "workspace": p.workspace(), "agent": p.rt.Role, "prompt": body})
		reqs[i] = request("/v1/triggers", js)
	}
	return reqs, markers, ids
}

// postAll parks one writer per connection on start; once start is closed each writes
// its request and reads the answer, which must be 202 Accepted. The returned wait
// waits for every writer and returns the first error.
func postAll(conns []*rawClient, reqs [][]byte, start <-chan struct{}) (wait func() error) {
	errs := make(chan error, len(reqs))
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if _, err := conns[i].c.Write(reqs[i]); err != nil {
				errs <- err
				return
			}
			resp, err := http.ReadResponse(conns[i].br, nil)
			if err != nil {
				errs <- err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				errs <- fmt.Errorf("fan-out trigger: HTTP %d", resp.StatusCode)
			}
		}()
	}
	return func() error {
		wg.Wait()
		close(errs)
		return <-errs
	}
}

// awaitSubmitted reads evs until n distinct triggers were seen submitted (or acked) and
// returns the latest of their first stamps; it gives up after 30 s.
func awaitSubmitted(evs <-chan *event, n int) (lastSub int64, err error) {
	seen := map[string]bool{}
	deadline := time.After(30 * time.Second)
	for len(seen) < n {
		select {
		case ev := <-evs:
			if !seen[ev.tr.TriggerID] {
				seen[ev.tr.TriggerID] = true
				lastSub = max(lastSub, ev.mono)
			}
		case <-deadline:
			return 0, fmt.Errorf("nudge fan-out: %d of %d receipts submitted after 30s", len(seen), n)
		}
	}
	return lastSub, nil
}

// fanFloor: one send-keys -l per pane, every line in one write of the bare control
// client, then Enter to each pane once its text was read.
func (b *bench) fanFloor(targets []*bpane, _ []*rawClient, res *fanoutResult) error {
	markers := make([]string, len(targets))
	lines := make([]string, len(targets))
	for i, p := range targets {
		marker, body := b.nextPrompt()
		markers[i] = marker
		lines[i] = controlmode.SendKeys(p.rt.PaneID, inject.Envelope{ID: fmt.Sprintf("nb%d", b.seq), Reason: "trigger", AckHint: true}.Wrap(body))[0]
	}
	errs := make(chan error, 2*len(targets)+1)
	read := make([]int64, len(targets))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, p := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			m, err := p.r.Await("m", markers[i], 20*time.Second)
			if err != nil {
				errs <- err
				return
			}
			read[i] = m.TS
			errs <- b.floor.enter(p.rt.PaneID)
		}()
	}
	time.Sleep(20 * time.Millisecond)
	sp := b.e.serverPID()
	s0 := runNS(sp)
	t0 := panereader.Mono()
	close(start)
	errs <- b.floor.typeAll(lines)
	wg.Wait()
	s1 := runNS(sp)
	close(errs)
	for e := range errs {
		if e != nil {
			return fmt.Errorf("floor fan-out: %w", e)
		}
	}
	for _, p := range targets {
		if _, err := p.r.Await("enter", "", 20*time.Second); err != nil {
			return fmt.Errorf("floor fan-out: %w", err)
		}
	}
	res.floorFirst = append(res.floorFirst, slices.Min(read)-t0)
	res.floorLast = append(res.floorLast, slices.Max(read)-t0)
	res.floorServerCPU = append(res.floorServerCPU, s1-s0)
	return nil
}

// fanChildren: the send-keys pair (text, then Enter) as children, one pane after another.
func (b *bench) fanChildren(targets []*bpane, _ []*rawClient, res *fanoutResult) error {
	markers := make([]string, len(targets))
	t0 := panereader.Mono()
	for i, p := range targets {
		marker, body := b.nextPrompt()
		markers[i] = marker
		text := inject.Envelope{ID: fmt.Sprintf("nb%d", b.seq), Reason: "trigger", AckHint: true}.Wrap(body)
		if out, err := exec.Command(b.e.tmux, "-L", b.e.tmuxSock, "send-keys", "-t", p.rt.PaneID, "-l", "--", text).CombinedOutput(); err != nil {
			return fmt.Errorf("send-keys -l: %v: %s", err, out)
		}
		if out, err := exec.Command(b.e.tmux, "-L", b.e.tmuxSock, "send-keys", "-t", p.rt.PaneID, "-H", "0d").CombinedOutput(); err != nil {
			return fmt.Errorf("send-keys -H 0d: %v: %s", err, out)
		}
	}
	first, last, err := awaitAll(targets, markers)
	if err != nil {
		return fmt.Errorf("children fan-out: %w", err)
	}
	res.subFirst = append(res.subFirst, first-t0)
	res.subLast = append(res.subLast, last-t0)
	return nil
}

func (f *fanoutResult) print(w io.Writer) {
	fmt.Fprintf(w, "Fan-out: one prompt to each of %d idle panes at once, %d rounds; ms from the first request (write, fork). Round 1 is cold (each pane's first trigger), the others warm\n\n", f.panes, len(f.nudgeLast))
	fmt.Fprintln(w, "| path | until | cold: round 1 ms | warm p50 ms | warm max ms |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	n := f.panes
	ms := func(name, until string, s []int64) {
		if len(s) == 0 {
			return
		}
		warm := "— | —"
		if len(s) > 1 {
			ws := slices.Clone(s[1:])
			warm = fmt.Sprintf("%.1f | %.1f", pct(ws, .5)/1e3, pct(ws, 1)/1e3)
		}
		fmt.Fprintf(w, "| %s | %s | %.1f | %s |\n", name, until, float64(s[0])/1e6, warm)
	}
	ms(fmt.Sprintf("nudge (%d concurrent requests)", n), "first pane read its prompt", f.nudgeFirst)
	ms(fmt.Sprintf("nudge (%d concurrent requests)", n), "every pane read its prompt", f.nudgeLast)
	ms(fmt.Sprintf("nudge (%d concurrent requests)", n), "every receipt submitted", f.nudgeSubmitted)
	ms(fmt.Sprintf("floor (%d send-keys in one control-mode write)", n), "first pane read its prompt", f.floorFirst)
	ms(fmt.Sprintf("floor (%d send-keys in one control-mode write)", n), "every pane read its prompt", f.floorLast)
	ms(fmt.Sprintf("send-keys children (%d pairs in turn)", n), "first pane read its prompt", f.subFirst)
	ms(fmt.Sprintf("send-keys children (%d pairs in turn)", n), "every pane read its prompt", f.subLast)
	fmt.Fprintln(w)
	// Each round's ratio is of two figures taken moments apart; the warm figure is the
	// median of the rounds' ratios, not a ratio of medians.
	ratios := func(a, b []int64) (cold float64, warm []float64) {
		for i := range min(len(a), len(b)) {
			r := float64(a[i]) / float64(b[i])
			if i == 0 {
				cold = r
			} else {
				warm = append(warm, r)
			}
		}
		return cold, warm
	}
	line := func(what string, a, b []int64) {
		cold, warm := ratios(a, b)
		fmt.Fprintf(w, "%s: cold %.2f×", what, cold)
		if len(warm) > 0 {
			slices.Sort(warm)
			fmt.Fprintf(w, ", warm median %.2f× (%.2f–%.2f×)", warm[len(warm)/2], warm[0], warm[len(warm)-1])
		}
		fmt.Fprintln(w)
	}
	line("every pane read, nudge / floor", f.nudgeLast, f.floorLast)
	line("every receipt submitted / floor's every pane read", f.nudgeSubmitted, f.floorLast)
	fmt.Fprintf(w, "load average (1 min) at each round's start: %s\n\n", strings.Join(f.load, ", "))
	if len(f.nudgeServerCPU) > 0 {
		cpu := func(s []int64) string {
			c := fmt.Sprintf("%.1f", float64(s[0])/1e6)
			if len(s) > 1 {
				c += fmt.Sprintf(" cold, %.1f warm", pct(slices.Clone(s[1:]), .5)/1e3)
			}
			return c
		}
		fmt.Fprintf(w, "CPU until every pane read its prompt, ms per round (warm: p50): nudge path: tmux server %s, daemon %s; floor path: tmux server %s\n\n",
			cpu(f.nudgeServerCPU), cpu(f.nudgeDaemonCPU), cpu(f.floorServerCPU))
		fmt.Fprintf(w, "CPU until every receipt submitted, ms per round (warm: p50): tmux server %s, daemon %s\n\n",
			cpu(f.nudgeServerAll), cpu(f.nudgeDaemonAll))
	}
}

// runNS is the CPU time pid's threads have run, in ns (/proc/PID/task/*/schedstat).
func runNS(pid int) int64 {
	dirs, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var t int64
	for _, d := range dirs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, d.Name()))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			t += n
		}
	}
	return t
}
