package main

import (
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/nudgehq/nudge/benchmarks/internal/panereader"
)

// detectRow is one detection latency: samples in ns and a note.
type detectRow struct {
	name, note string
	s          []int64
}

// detection measures how long nudge takes to see what a pane did: output going quiet →
// READY, an ack marker printed → acked, the pane's program killed → runtime offline.
// Every stamp is CLOCK_MONOTONIC: the reader's after its write(2), the harness's when an
// event line arrives on GET /v1/events (or before kill(2)).
func (b *bench) detection(n int) ([]detectRow, error) {
	var rows []detectRow
	r, err := b.detectReady(n)
	if err != nil {
		return nil, err
	}
	rows = append(rows, r)
	if r, err = b.detectAck(n); err != nil {
		return nil, err
	}
	rows = append(rows, r)
	if r, err = b.detectKill(min(n, 20)); err != nil {
		return nil, err
	}
	return append(rows, r), nil
}

func (b *bench) detectReady(n int) (detectRow, error) {
	row := detectRow{name: "output quiet → readiness READY event", note: "bench profile ready_quiet 300ms; burst of 20 busy lines 10ms apart, then a `$ ` prompt"}
	p, err := b.e.spawn("dready", "bench")
	if err != nil {
		return row, err
	}
	for i := 0; i < n; i++ {
		time.Sleep(200 * time.Millisecond)
		evs, cancel := b.e.events.watch(func(ev *event) bool {
			return ev.Type == "readiness" && ev.rd.RuntimeID == p.rt.RuntimeID && ev.rd.Readiness == "READY"
		})
		tag := fmt.Sprintf("r%d", i)
		if err := p.r.Send("burst " + tag + " 20 10ms"); err != nil {
			cancel()
			return row, err
		}
		w, err := p.r.Await("w", tag, 10*time.Second)
		if err != nil {
			cancel()
			return row, err
		}
		ev, err := awaitAfter(evs, w.TS, 10*time.Second)
		cancel()
		if err != nil {
			return row, fmt.Errorf("READY after burst %d: %w", i, err)
		}
		row.s = append(row.s, ev.mono-w.TS)
	}
	return row, nil
}

// awaitAfter returns the first event stamped after ts.
func awaitAfter(evs <-chan *event, ts int64, timeout time.Duration) (*event, error) {
	t := time.After(timeout)
	for {
		select {
		case ev := <-evs:
			if ev.mono > ts {
				return ev, nil
			}
		case <-t:
			return nil, fmt.Errorf("no event within %v", timeout)
		}
	}
}

func (b *bench) detectAck(n int) (detectRow, error) {
	row := detectRow{name: "ACK_TRIGGER:<id> printed → trigger `acked` event", note: "benchack profile (submitted is not the ack)"}
	p, err := b.e.spawn("dack", "benchack")
	if err != nil {
		return row, err
	}
	for i := 0; i < n; i++ {
		time.Sleep(20 * time.Millisecond)
		_, body := b.nextPrompt()
		id := fmt.Sprintf("nback%d", b.seq)
		evs, cancel := b.e.events.watch(func(ev *event) bool { return ev.Type == "trigger" && ev.tr.TriggerID == id })
		if _, err := b.e.post("/v1/triggers", map[string]any{"trigger_id": id, "workspace": workspace, "agent": p.rt.Role, "prompt": body}); err != nil {
			cancel()
			return row, err
		}
		if err := awaitState(evs, "awaiting_ack", "submitted"); err != nil {
			cancel()
			return row, fmt.Errorf("%s: %w", id, err)
		}
		if err := p.r.Send("print " + id + " ACK_TRIGGER:" + id); err != nil {
			cancel()
			return row, err
		}
		w, err := p.r.Await("w", id, 10*time.Second)
		if err != nil {
			cancel()
			return row, err
		}
		ev, err := awaitAfter(filterState(evs, "acked"), w.TS, 10*time.Second)
		cancel()
		if err != nil {
			return row, fmt.Errorf("%s acked: %w", id, err)
		}
		row.s = append(row.s, ev.mono-w.TS)
	}
	return row, nil
}

func awaitState(evs <-chan *event, states ...string) error {
	t := time.After(10 * time.Second)
	for {
		select {
		case ev := <-evs:
			for _, s := range states {
				if ev.tr.State == s {
					return nil
				}
			}
			if ev.tr.Closed {
				return fmt.Errorf("closed in state %s", ev.tr.State)
			}
		case <-t:
			return fmt.Errorf("not %v within 10s", states)
		}
	}
}

func filterState(in <-chan *event, state string) <-chan *event {
	out := make(chan *event, 64)
	go func() {
		for ev := range in {
			if ev.tr.State == state {
				out <- ev
				return
			}
		}
	}()
	return out
}

func (b *bench) detectKill(n int) (detectRow, error) {
	row := detectRow{name: "pane program killed (kill -9) → runtime `offline` event"}
	seen := map[string]int{}
	for i := 0; i < n; i++ {
		p, err := b.e.spawn(fmt.Sprintf("dkill%d", i), "bench")
		if err != nil {
			return row, err
		}
		time.Sleep(100 * time.Millisecond)
		evs, cancel := b.e.events.watch(func(ev *event) bool {
			return ev.Type == "runtime" && ev.rt.RuntimeID == p.rt.RuntimeID && ev.rt.Status != "ready" && ev.rt.Status != "starting"
		})
		t0 := panereader.Mono()
		if err := syscall.Kill(p.r.PID, syscall.SIGKILL); err != nil {
			cancel()
			return row, err
		}
		ev, err := awaitAfter(evs, t0, 10*time.Second)
		cancel()
		if err != nil {
			return row, fmt.Errorf("pane %s killed: %w", p.rt.PaneID, err)
		}
		seen[ev.rt.Status]++
		row.s = append(row.s, ev.mono-t0)
		b.e.post("/v1/runtimes/"+p.rt.RuntimeID+"/stop", map[string]any{})
	}
	row.note = fmt.Sprintf("first status after ready: %v", seen)
	return row, nil
}

func (r *report) printDetect(w io.Writer) {
	fmt.Fprintln(w, "Detection latency (µs)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| signal | n | p50 | p95 | p99 | max | note |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, d := range r.detect {
		fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %.0f | %.0f | %s |\n", d.name, len(d.s), pct(d.s, .5), pct(d.s, .95), pct(d.s, .99), pct(d.s, 1), d.note)
	}
	fmt.Fprintln(w)
}
