package fuzz

import (
	"bytes"
	"math"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/observe"
)

// metricsCorpus seeds FuzzMetricsExposition: label values as they reach /metrics.
var metricsCorpus = []struct {
	runtimeID, status, readiness string
	seconds                      float64
}{
	{"rt_w.reviewer", "ready", "READY", 0.0003},             // the usual
	{`rt_"quoted"\back`, "paused", "", 5},                   // quote and backslash in a label
	{"rt_\n\x00\u00e9\u2028", "weird status", "BUSY\t", 61}, // control bytes, non-ASCII, past the last bucket
	{"", "", "NEEDS_CONFIRMATION", math.Inf(1)},             // empty id, an infinite sample
	{"rt_w.x", "ready", "READY", -1},                        // a negative sample (clock step)
	{"rt_w.y", "ready", "READY", math.NaN()},                // NaN is dropped
}

// Whatever the runtimes hold and whatever was observed, /metrics is text that
// Prometheus's own parser accepts, every family typed, every histogram cumulative with
// _count equal to its +Inf bucket.
func FuzzMetricsExposition(f *testing.F) {
	for _, c := range metricsCorpus {
		f.Add(c.runtimeID, c.status, c.readiness, c.seconds)
	}
	f.Fuzz(func(t *testing.T, runtimeID, status, readiness string, seconds float64) {
		m := observe.NewMetrics(time.Unix(0, 0))
		m.ObserveTyped(time.Duration(seconds * 1e9))
		hist := observe.NewHistogram("x_seconds", observe.LatencyBuckets)
		hist.Update(seconds)
		live := observe.Live{
			Runtimes: func() []nudge.Runtime {
				return []nudge.Runtime{{RuntimeID: runtimeID, Status: nudge.Status(status), Readiness: nudge.Readiness(readiness)}}
			},
			QueueDepth: func(string) int { return 1 },
		}
		var b bytes.Buffer
		if err := m.WritePrometheus(&b, live); err != nil {
			t.Fatal(err)
		}
		var p expfmt.TextParser
		fams, err := p.TextToMetricFamilies(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatalf("not Prometheus text: %v\n%s", err, b.Bytes())
		}
		for name, fam := range fams {
			if fam.GetType() == dto.MetricType_UNTYPED || fam.GetHelp() == "" {
				t.Errorf("%s: type %v, help %q", name, fam.GetType(), fam.GetHelp())
			}
			if fam.GetType() != dto.MetricType_HISTOGRAM {
				continue
			}
			h := fam.GetMetric()[0].GetHistogram()
			bs := h.GetBucket()
			for i := 1; i < len(bs); i++ {
				if bs[i].GetCumulativeCount() < bs[i-1].GetCumulativeCount() {
					t.Errorf("%s: not cumulative at le=%v", name, bs[i].GetUpperBound())
				}
			}
			if last := bs[len(bs)-1]; !math.IsInf(last.GetUpperBound(), 1) || last.GetCumulativeCount() != h.GetSampleCount() {
				t.Errorf("%s: +Inf bucket %v, count %d", name, last, h.GetSampleCount())
			}
		}
		if got := hist.Count(); got > 1 || (got == 0) != math.IsNaN(seconds) {
			t.Errorf("Update(%v): count %d", seconds, got)
		}
		if n := len(fams["trigger_queue_depth"].GetMetric()); n != 1 {
			t.Errorf("trigger_queue_depth: %d samples for one runtime", n)
		}
	})
}
