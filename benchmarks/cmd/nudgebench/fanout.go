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
}

// fanout runs rounds broadcasts over the first n panes (all quiet for the phase).
func (b *bench) fanout(n, rounds int) (*fanoutResult, error) {
	if err := b.grow(n); err != nil {
		return nil, err
	}
	targets := b.panes[:n]
	for _, p := range targets {
		if p.streaming {
			p.r.Send("quiet")
		}
	}
	time.Sleep(time.Second) // let the streamers' last lines settle into READY
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
		js, _ := json.Marshal(map[string]any{"trigger_id": id, "workspace": workspace, "agent": p.rt.Role, "prompt": body})
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

// fanFloor: one send-keys -l per pane written by the bare control client, all at once
// (pipelined on the one connection), then Enter to each once its text was read.
func (b *bench) fanFloor(targets []*bpane, _ []*rawClient, res *fanoutResult) error {
	markers := make([]string, len(targets))
	texts := make([]string, len(targets))
	for i := range targets {
		marker, body := b.nextPrompt()
		markers[i] = marker
		texts[i] = inject.Envelope{ID: fmt.Sprintf("nb%d", b.seq), Reason: "trigger", AckHint: true}.Wrap(body)
	}
	errs := make(chan error, 2*len(targets))
	read := make([]int64, len(targets))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, p := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if err := b.floor.typeText(p.rt.PaneID, p.rt.PID, texts[i], false); err != nil {
				errs <- err
				return
			}
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
	fmt.Fprintf(w, "Fan-out: one prompt to each of %d idle panes at once, %d rounds; ms from the first request (write, fork)\n\n", f.panes, len(f.nudgeLast))
	fmt.Fprintln(w, "| path | until | p50 ms | max ms |")
	fmt.Fprintln(w, "|---|---|---|---|")
	n := f.panes
	ms := func(name, until string, s []int64) {
		s = slices.Clone(s)
		fmt.Fprintf(w, "| %s | %s | %.1f | %.1f |\n", name, until, pct(s, .5)/1e3, pct(s, 1)/1e3)
	}
	ms(fmt.Sprintf("nudge (%d concurrent requests)", n), "first pane read its prompt", f.nudgeFirst)
	ms(fmt.Sprintf("nudge (%d concurrent requests)", n), "every pane read its prompt", f.nudgeLast)
	ms(fmt.Sprintf("nudge (%d concurrent requests)", n), "every receipt submitted", f.nudgeSubmitted)
	ms(fmt.Sprintf("floor (%d control-mode writes)", n), "first pane read its prompt", f.floorFirst)
	ms(fmt.Sprintf("floor (%d control-mode writes)", n), "every pane read its prompt", f.floorLast)
	ms(fmt.Sprintf("send-keys children (%d pairs in turn)", n), "first pane read its prompt", f.subFirst)
	ms(fmt.Sprintf("send-keys children (%d pairs in turn)", n), "every pane read its prompt", f.subLast)
	fmt.Fprintln(w)
	if len(f.nudgeServerCPU) > 0 {
		fmt.Fprintf(w, "CPU until every pane read its prompt, ms per round (p50): nudge path: tmux server %.1f, daemon %.1f; floor path: tmux server %.1f\n\n",
			pct(slices.Clone(f.nudgeServerCPU), .5)/1e3, pct(slices.Clone(f.nudgeDaemonCPU), .5)/1e3, pct(slices.Clone(f.floorServerCPU), .5)/1e3)
		fmt.Fprintf(w, "CPU until every receipt submitted, ms per round (p50): tmux server %.1f, daemon %.1f (per trigger: %.0f and %.0f µs)\n\n",
			pct(slices.Clone(f.nudgeServerAll), .5)/1e3, pct(slices.Clone(f.nudgeDaemonAll), .5)/1e3,
			pct(slices.Clone(f.nudgeServerAll), .5)/float64(n), pct(slices.Clone(f.nudgeDaemonAll), .5)/float64(n))
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
