package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"
)

// report collects every phase's results and prints them as markdown tables.
type report struct {
	o          options
	when       time.Time
	machine    string
	trigger    []*triggerResult
	fanout     *fanoutResult
	detect     []detectRow
	scale      *scaleResult
	fleet      *fleetResult
	throughput *throughputResult
	host       *hostResult
	soak       *soakResult
}

func newReport(o options, e *env) *report {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	tv, _ := exec.Command(e.tmux, "-V").Output()
	return &report{o: o, when: time.Now(), machine: fmt.Sprintf("nproc %d, %s, %s, %s",
		runtime.NumCPU(), cpu, strings.TrimSpace(string(tv)), runtime.Version())}
}

// pct is the p-th percentile of s in µs (s is sorted in place).
func pct(s []int64, p float64) float64 {
	if len(s) == 0 {
		return 0
	}
	slices.Sort(s)
	i := int(float64(len(s))*p+0.999999) - 1
	return float64(s[max(0, min(i, len(s)-1))]) / 1e3
}

func row(w io.Writer, name string, s []int64) {
	fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %.0f | %.0f |\n", name, len(s), pct(s, .5), pct(s, .95), pct(s, .99), pct(s, 1))
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "nudgebench %s; %s\n", r.when.Format("2006-01-02 15:04 MST"), r.machine)
	fmt.Fprintf(w, "nudge serve %s\n\n", strings.Join(r.o.servedFlags(), " "))
	if len(r.trigger) > 0 {
		fmt.Fprintf(w, "Trigger latency (µs), gap %v before each trigger, %d-byte prompt in the envelope\n\n", r.o.gap, promptLen)
		fmt.Fprintln(w, "| panes (streaming) | path | n | p50 | p95 | p99 | max |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
		for _, t := range r.trigger {
			pre := fmt.Sprintf("%d (%d)", t.panes, t.streaming)
			row(w, pre+" | nudge: request → pane read text", t.nudgeRead)
			row(w, pre+" | nudge: request → API answer", t.nudgeAPI)
			row(w, pre+" | nudge: request → pane read Enter", t.nudgeEnter)
			row(w, pre+" | floor (bare control client): write → pane read text", t.floorRead)
			row(w, pre+" | floor (bare control client): write → %end", t.floorDone)
			row(w, pre+" | guarded floor (bare client, nudge's if-shell guard): write → pane read text", t.guardRead)
			row(w, pre+" | guarded floor: write → both %end", t.guardDone)
			row(w, pre+" | send-keys children: fork → pane read text", t.subRead)
			row(w, pre+" | send-keys children: both exited", t.subDone)
			row(w, pre+" | send-keys children: fork → pane read Enter", t.subEnter)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "nudge's own share, measured by the daemon (`trigger_received_to_typed_seconds`: it began reading")
		fmt.Fprintln(w, "the request → it wrote the prompt to tmux), µs, upper bounds of its histogram's buckets:")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| panes | n | p50 ≤ | p95 ≤ | p99 ≤ |")
		fmt.Fprintln(w, "|---|---|---|---|---|")
		for _, t := range r.trigger {
			if len(t.ownPct) == 3 {
				fmt.Fprintf(w, "| %d | %.0f | %.0f | %.0f | %.0f |\n", t.panes, t.ownN, t.ownPct[0], t.ownPct[1], t.ownPct[2])
			}
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| panes | nudge/floor, text read, p50 | p99 | nudge/guarded floor, p50 | p99 | children/nudge, text read, p50 | p99 | triggers that waited for the pane's previous one |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
		for _, t := range r.trigger {
			fmt.Fprintf(w, "| %d | %.2fx | %.2fx | %.2fx | %.2fx | %.1fx | %.1fx | %d |\n", t.panes,
				pct(t.nudgeRead, .5)/pct(t.floorRead, .5), pct(t.nudgeRead, .99)/pct(t.floorRead, .99),
				pct(t.nudgeRead, .5)/pct(t.guardRead, .5), pct(t.nudgeRead, .99)/pct(t.guardRead, .99),
				pct(t.subRead, .5)/pct(t.nudgeRead, .5), pct(t.subRead, .99)/pct(t.nudgeRead, .99), t.waits)
		}
		fmt.Fprintln(w)
	}
	if r.fanout != nil {
		r.fanout.print(w)
	}
	if len(r.detect) > 0 {
		r.printDetect(w)
	}
	if r.scale != nil {
		r.scale.print(w)
	}
	if r.fleet != nil {
		r.fleet.print(w)
	}
	if r.throughput != nil {
		r.throughput.print(w)
	}
	if r.host != nil {
		r.host.print(w)
	}
	if r.soak != nil {
		r.soak.print(w, r.o)
	}
}

func (o options) servedFlags() []string {
	return []string{"--submit-quiet", o.submitQuiet.String(), "--echo-timeout", o.echoTimeout.String(),
		"--submit-timeout", o.submitTimeout.String(), "--rate-limit 1000000/min --loop-turns 1000000 --loop-repeats 1000000", o.serveArgs}
}
