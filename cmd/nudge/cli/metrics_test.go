package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// promLine is the Prometheus text exposition format's sample line: name{labels} value.
var (
	promSample = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*")*,?)?\})? ([^ ]+)( -?[0-9]+)?$`)
	promMeta   = regexp.MustCompile(`^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*$`)
)

// parseProm checks every line of a Prometheus text exposition and returns the samples by
// their full name (with labels).
func parseProm(t *testing.T, r io.Reader) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "" || promMeta.MatchString(line) {
			continue
		}
		if strings.HasPrefix(line, "#") {
			t.Errorf("line %d: bad comment %q", n, line)
			continue
		}
		m := promSample.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("line %d: not Prometheus text: %q", n, line)
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil && m[3] != "NaN" && m[3] != "+Inf" && m[3] != "-Inf" {
			t.Errorf("line %d: bad value %q", n, line)
		}
		key := m[1] + m[2]
		if _, dup := out[key]; dup {
			t.Errorf("line %d: duplicate sample %q", n, key)
		}
		out[key] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (td *testDaemon) metrics() map[string]float64 {
	td.t.Helper()
	return parseProm(td.t, bytes.NewReader(td.metricsText()))
}

// metricsText is the body of GET /metrics on the socket.
func (td *testDaemon) metricsText() []byte {
	td.t.Helper()
	resp, err := td.c.send(context.Background(), "GET", "/metrics", nil)
	if err != nil {
		td.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		td.t.Fatalf("GET /metrics: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		td.t.Fatal(err)
	}
	return b
}

// histogramQuantile is PromQL's histogram_quantile over one histogram: the bucket that
// holds the q-th rank, interpolated linearly inside it.
func histogramQuantile(q float64, h *dto.Histogram) float64 {
	total := float64(h.GetSampleCount())
	rank, lower, below := q*total, 0.0, 0.0
	for _, b := range h.GetBucket() {
		upper, n := b.GetUpperBound(), float64(b.GetCumulativeCount())
		if n >= rank && total > 0 {
			if math.IsInf(upper, 1) {
				return lower
			}
			return lower + (upper-lower)*(rank-below)/(n-below)
		}
		lower, below = upper, n
	}
	return math.NaN()
}

func TestParsePromRejectsGarbage(t *testing.T) {
	for _, bad := range []string{"name value with spaces", "9bad 1", `x{a="b} 1`, "x{a=b} 1"} {
		if promSample.MatchString(bad) {
			t.Errorf("%q parsed as a sample", bad)
		}
	}
}

func TestMetricsCountRealTriggers(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.Server.MetricsAddr = freeAddr(t)
	td := startDaemon(t, cfg)
	rt, file := rawCat(t, td, "m1", "cat")
	before := td.metrics()
	for _, name := range []string{"trigger_requests_total", "trigger_delivered_total", "trigger_timeout_total",
		"trigger_fallback_resume_total", "tmux_trigger_attempt_total", "tmux_trigger_delivered_total",
		"tmux_trigger_retry_total", "tmux_trigger_timeout_total", "tmux_runtime_restart_total",
		"tmux_reconcile_drift_total", `nudge_runtimes{status="ready"}`, `trigger_queue_depth{runtime="` + rt.RuntimeID + `"}`} {
		if _, ok := before[name]; !ok {
			t.Errorf("missing %s", name)
		}
	}
	for i := range 3 {
		id := fmt.Sprintf("m-%d", i)
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "m1", "agent": "cat", "prompt": "hello " + id}); err != nil {
			t.Fatal(err)
		}
		if got := td.waitTrigger(id, closed); got.Result != "delivered" {
			t.Fatalf("trigger %s: %+v", id, got)
		}
	}
	readUntil(t, file, func(s string) bool { return strings.Count(s, "hello m-") == 3 })
	var after map[string]float64
	deadline := time.Now().Add(10 * time.Second)
	for {
		after = td.metrics()
		if after["trigger_delivered_total"]-before["trigger_delivered_total"] >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, name := range []string{"trigger_requests_total", "trigger_delivered_total", "tmux_trigger_attempt_total", "tmux_trigger_delivered_total"} {
		if d := after[name] - before[name]; d != 3 {
			t.Errorf("%s moved by %v, want 3", name, d)
		}
	}
	if d := after["trigger_timeout_total"] - before["trigger_timeout_total"]; d != 0 {
		t.Errorf("trigger_timeout_total moved by %v", d)
	}
	if after["trigger_request_to_injected_seconds_count"] < 3 {
		t.Errorf("request->injected histogram count %v, want >= 3", after["trigger_request_to_injected_seconds_count"])
	}
	// nudge's own share: one sample per trigger typed, each well under a minute
	if n, sum := after["trigger_received_to_typed_seconds_count"], after["trigger_received_to_typed_seconds_sum"]; n != 3 || sum <= 0 || sum > 60 {
		t.Errorf("received->typed histogram count %v sum %v, want 3 samples", n, sum)
	}
	total := 0.0
	for k, v := range after {
		if strings.HasPrefix(k, "nudge_runtimes{status=") {
			total += v
		}
	}
	if total != 1 {
		t.Errorf("nudge_runtimes by status sums to %v, want 1", total)
	}
	if after[`trigger_queue_depth{runtime="`+rt.RuntimeID+`"}`] != 0 {
		t.Errorf("queue depth after all triggers closed: %v", after[`trigger_queue_depth{runtime="`+rt.RuntimeID+`"}`])
	}

	// Stock Prometheus reads it: typed families, and a quantile from the cumulative le
	// buckets of nudge's own share and of the seed's trigger latency.
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(bytes.NewReader(td.metricsText()))
	if err != nil {
		t.Fatalf("expfmt: %v", err)
	}
	for _, name := range []string{"trigger_received_to_typed_seconds", "trigger_latency_seconds"} {
		f := fams[name]
		if f.GetType() != dto.MetricType_HISTOGRAM || len(f.GetMetric()) != 1 {
			t.Fatalf("%s: %v, want one histogram", name, f)
		}
		h := f.GetMetric()[0].GetHistogram()
		p50, p99 := histogramQuantile(0.5, h), histogramQuantile(0.99, h)
		t.Logf("%s: n=%d p50=%.6fs p99=%.6fs", name, h.GetSampleCount(), p50, p99)
		if h.GetSampleCount() != 3 || !(p50 > 0 && p50 <= p99 && p99 <= 60) {
			t.Errorf("%s: n=%d p50=%v p99=%v", name, h.GetSampleCount(), p50, p99)
		}
	}
	if f := fams["trigger_delivered_total"]; f.GetType() != dto.MetricType_COUNTER || f.GetHelp() == "" {
		t.Errorf("trigger_delivered_total: %v", f)
	}

	// The same text on --metrics-addr.
	resp, err := http.Get("http://" + cfg.Server.MetricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	tcp := parseProm(t, resp.Body)
	if tcp["trigger_delivered_total"] != after["trigger_delivered_total"] {
		t.Errorf("tcp trigger_delivered_total %v, socket %v", tcp["trigger_delivered_total"], after["trigger_delivered_total"])
	}
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
