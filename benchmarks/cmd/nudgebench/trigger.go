package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/nudgehq/nudge/benchmarks/internal/panereader"
	"github.com/nudgehq/nudge/inject"
)

const promptLen = 80

// triggerResult is one pane count's samples, in ns.
type triggerResult struct {
	panes, streaming    int
	nudgeRead, nudgeAPI []int64 // request → marker read; request → HTTP response
	nudgeEnter          []int64 // request → Enter read
	subRead, subEnter   []int64 // fork of send-keys -l → marker read; → Enter read
	subDone             []int64 // both children exited
	floorRead           []int64 // bare control client: write of send-keys -l → marker read
	floorDone           []int64 // bare control client: → tmux answered the command (%end)
	guardRead           []int64 // bare control client, the line guarded as nudge's (IfPane): → marker read
	guardDone           []int64 // the same: → tmux answered both blocks
	waits               int     // samples that waited for the pane's previous trigger
	// own: the daemon's trigger_received_to_typed_seconds over the run (n, p50, p95,
	// p99 in µs, bucket upper bounds): nudge's own share, without tmux and the pane.
	ownN   float64
	ownPct []float64
}

// grow brings the managed pane set to n panes, every 10th of them streaming.
func (b *bench) grow(n int) error {
	for len(b.panes) < n {
		i := len(b.panes)
		p, err := b.e.spawn(fmt.Sprintf("p%03d", i), "bench")
		if err != nil {
			return fmt.Errorf("spawn pane %d: %w", i, err)
		}
		if i%10 == 9 {
			if err := p.r.Send("stream " + b.o.streamEvery.String()); err != nil {
				return err
			}
			p.streaming = true
		}
		b.panes = append(b.panes, p)
	}
	return nil
}

// triggerLatency sends n triggers round-robin over the quiet ones of the first panes
// panes, each followed (or preceded, alternately) by the same text through `tmux
// send-keys` subprocesses. The streaming panes are load only: typing into a pane whose
// program is printing leaves the typed text mid-stream, where the detector (rightly, for
// a shell) sees a draft and defers until the pane is quiet, which it never is.
func (b *bench) triggerLatency(panes, n, warmup int) (*triggerResult, error) {
	if err := b.grow(panes); err != nil {
		return nil, err
	}
	res := &triggerResult{panes: panes}
	raw, err := dialRaw(b.e.apiSock)
	if err != nil {
		return nil, err
	}
	defer raw.close()
	b.raw = raw
	var targets []*bpane
	for _, p := range b.panes[:panes] {
		if p.streaming {
			res.streaming++
		} else {
			targets = append(targets, p)
		}
		p.r.Drain()
	}
	// Every target gets at least one warm-up trigger: a lane's first trigger after the
	// daemon starts looks at the pane before typing (one more round trip), which would
	// otherwise be 1 in 5 of the samples at 100 panes and n 500, and the tail's whole
	// story. The first-trigger cost is the pane check's, shown in the trace.
	warmup = max(warmup, len(targets))
	var before promHistogram
	for k := 0; k < warmup+n; k++ {
		p := targets[k%len(targets)]
		keep := k >= warmup
		if k == warmup {
			if err := b.waitLane(p, res); err != nil {
				return nil, err
			}
			if before, err = b.e.readHistogram("trigger_received_to_typed_seconds"); err != nil {
				return nil, err
			}
		}
		// The paths take turns going first.
		for step := 0; step < 4; step++ {
			var err error
			switch (k + step) % 4 {
			case 0:
				err = b.nudgeSample(p, res, keep)
			case 1:
				err = b.floorSample(p, res, keep, false)
			case 2:
				err = b.floorSample(p, res, keep, true)
			default:
				err = b.subSample(p, res, keep)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	after, err := b.e.readHistogram("trigger_received_to_typed_seconds")
	if err != nil {
		return nil, err
	}
	res.ownN, res.ownPct = after.since(before).quantiles(.5, .95, .99)
	return res, nil
}

func (b *bench) nextPrompt() (marker, body string) {
	b.seq++
	marker = panereader.Marker(b.seq)
	return marker, strings.Repeat("p", promptLen-len(marker)) + marker
}

// waitLane waits until the pane's latest nudge trigger is final, so that neither path
// types into a pane while nudge is still confirming the previous submit there.
func (b *bench) waitLane(p *bpane, res *triggerResult) error {
	ch := b.final[p.last]
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
	default:
		res.waits++
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("trigger %s on %s not final after 10s\n%s", p.last, p.rt.Role, b.diagnose(p, p.last))
		}
	}
	delete(b.final, p.last)
	return nil
}

// nudgeSample: POST /v1/triggers, then the pane's stamps of the marker and of Enter.
func (b *bench) nudgeSample(p *bpane, res *triggerResult, keep bool) error {
	if err := b.waitLane(p, res); err != nil {
		return err
	}
	time.Sleep(b.o.gap)
	marker, body := b.nextPrompt()
	id := fmt.Sprintf("nb%d", b.seq)
	b.final[id] = b.e.events.expectFinal(id)
	p.last = id
	js, _ := json.Marshal(map[string]any{"trigger_id": id, "workspace": p.workspace(), "agent": p.rt.Role, "prompt": body})
	req := request("/v1/triggers", js)
	t0 := panereader.Mono()
	status, rb, err := b.raw.send(req)
	if err != nil {
		return err
	}
	tAPI := panereader.Mono()
	if status != http.StatusAccepted {
		return fmt.Errorf("trigger %s: %d: %s", id, status, rb)
	}
	m, err := p.r.Await("m", marker, 10*time.Second)
	if err != nil {
		return fmt.Errorf("nudge trigger %s: %w\n%s", id, err, b.diagnose(p, id))
	}
	en, err := p.r.Await("enter", "", 10*time.Second)
	if err != nil {
		return fmt.Errorf("nudge trigger %s: %w", id, err)
	}
	if os.Getenv("NUDGEBENCH_DEBUG") != "" && m.TS-t0 > 3e6 {
		rec, _ := b.e.get("/v1/triggers/" + id)
		fmt.Fprintf(os.Stderr, "slow %s: read %dµs api %dµs: %s\n", id, (m.TS-t0)/1000, (tAPI-t0)/1000, rec)
	}
	if keep {
		res.nudgeRead = append(res.nudgeRead, m.TS-t0)
		res.nudgeAPI = append(res.nudgeAPI, tAPI-t0)
		res.nudgeEnter = append(res.nudgeEnter, en.TS-t0)
	}
	return nil
}

// subSample types the same envelope with `tmux send-keys -l` and `send-keys -H 0d`, each a
// child process, as the tools nudge replaces do.
func (b *bench) subSample(p *bpane, res *triggerResult, keep bool) error {
	if err := b.waitLane(p, res); err != nil {
		return err
	}
	time.Sleep(b.o.gap)
	marker, body := b.nextPrompt()
	text := inject.Envelope{ID: fmt.Sprintf("nb%d", b.seq), Reason: "trigger", AckHint: true}.Wrap(body)
	t0 := panereader.Mono()
	if out, err := exec.Command(b.e.tmux, "-L", b.e.tmuxSock, "send-keys", "-t", p.rt.PaneID, "-l", "--", text).CombinedOutput(); err != nil {
		return fmt.Errorf("send-keys -l: %v: %s", err, out)
	}
	if out, err := exec.Command(b.e.tmux, "-L", b.e.tmuxSock, "send-keys", "-t", p.rt.PaneID, "-H", "0d").CombinedOutput(); err != nil {
		return fmt.Errorf("send-keys -H 0d: %v: %s", err, out)
	}
	tDone := panereader.Mono()
	m, err := p.r.Await("m", marker, 10*time.Second)
	if err != nil {
		return fmt.Errorf("send-keys: %w", err)
	}
	en, err := p.r.Await("enter", "", 10*time.Second)
	if err != nil {
		return fmt.Errorf("send-keys: %w", err)
	}
	if keep {
		res.subRead = append(res.subRead, m.TS-t0)
		res.subEnter = append(res.subEnter, en.TS-t0)
		res.subDone = append(res.subDone, tDone-t0)
	}
	return nil
}

// diagnose describes why a trigger did not reach its pane: its record and the pane.
func (b *bench) diagnose(p *bpane, id string) string {
	rec, _ := b.e.get("/v1/triggers/" + id)
	sc, _ := exec.Command(b.e.tmux, "-L", b.e.tmuxSock, "capture-pane", "-p", "-J", "-S", "-", "-t", p.rt.PaneID).CombinedOutput()
	sc = []byte(strings.Join(slices.DeleteFunc(strings.Split(string(sc), "\n"), func(l string) bool { return strings.HasPrefix(l, "stream line") }), "\n"))
	return fmt.Sprintf("trigger record: %s\npane %s:\n%s", rec, p.rt.PaneID, sc)
}
