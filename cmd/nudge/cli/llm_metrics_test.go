package cli

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/nudgehq/nudge/detector"
)

// The LLM classifier shows in /metrics: its questions by outcome (ok, error for a 500,
// timeout for one that never answers within --llm-timeout, refused for a 401, invalid for
// prose instead of a verdict), their time
// as a Prometheus histogram, and how many verdicts overrode the rules' (READY over the
// shell pack's unsure BUSY does; BUSY over it does not). Before, none of it was counted.
func TestLLMClassifierMetrics(t *testing.T) {
	standIn := newLLMStandIn(t)
	cfg := newTestConfig(t)
	cfg.ProfileDir = t.TempDir()
	writeFile(t, filepath.Join(cfg.ProfileDir, "odd.json"), `{"launch":["sh"],"allowed_launchers":["sh"],"pack":"shell",
		"queues_input":true,"ack_signals":["marker","api"],"submitted_is_ack":true,"ready_quiet":"200ms"}`)
	cfg.LLM.URL = standIn.srv.URL + "/v1/chat/completions"
	cfg.LLM.Timeout = 2 * time.Second // the hanging stand-in times out
	cfg.LLM.Retries = 0
	cfg.Monitor.LLMSettle = 300 * time.Millisecond
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	td := startDaemon(t, cfg)

	modes := []string{"ready", "busy", "error", "hang", "refused", "invalid"}
	for _, mode := range modes {
		var rt runtimeView
		body := spawnBody{Workspace: "llmm", Role: mode, Agent: "odd", Dir: td.cfg.Panes.Roots[0],
			Argv: []string{"sh", "-c", "echo MODE=" + mode + "; exec cat"}}
		if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &rt); err != nil {
			t.Fatalf("spawn %s: %v", mode, err)
		}
	}

	outcome := func(m map[string]float64, o detector.LLMOutcome) float64 {
		return m[`nudge_llm_requests_total{outcome="`+string(o)+`"}`]
	}
	// settled: every pane was asked about and every answer is counted, ok ones (ready,
	// busy) and the overrides (ready's) exactly.
	settled := func(m map[string]float64) bool {
		for _, mode := range modes {
			if standIn.count(mode) == 0 || standIn.pending(mode) != 0 {
				return false
			}
		}
		return outcome(m, detector.LLMOK) == float64(standIn.count("ready")+standIn.count("busy")) &&
			outcome(m, detector.LLMError) >= 1 && outcome(m, detector.LLMTimeout) >= 1 && outcome(m, detector.LLMRefused) >= 1 &&
			outcome(m, detector.LLMInvalid) >= 1 && m["nudge_llm_overrides_total"] == float64(standIn.count("ready"))
	}
	var m map[string]float64
	deadline := time.Now().Add(60 * time.Second)
	for m = td.metrics(); !settled(m) && time.Now().Before(deadline); m = td.metrics() {
		time.Sleep(50 * time.Millisecond)
	}
	m = td.metrics() // once more: nothing counted late (a BUSY verdict taken for an override)
	summary := fmt.Sprintf("requests %v, metrics ok=%v error=%v timeout=%v refused=%v invalid=%v canceled=%v overrides=%v",
		standIn.requests, outcome(m, detector.LLMOK), outcome(m, detector.LLMError), outcome(m, detector.LLMTimeout),
		outcome(m, detector.LLMRefused), outcome(m, detector.LLMInvalid), outcome(m, detector.LLMCanceled), m["nudge_llm_overrides_total"])
	if !settled(m) {
		t.Fatalf("the LLM classifier's metrics: %s", summary)
	}
	t.Log(summary)

	// Stock Prometheus reads the time as a histogram: one sample per question answered or
	// failed, each within --llm-timeout (the hanging one at it).
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(bytes.NewReader(td.metricsText()))
	if err != nil {
		t.Fatalf("expfmt: %v", err)
	}
	f := fams["nudge_llm_request_seconds"]
	if f.GetType() != dto.MetricType_HISTOGRAM || len(f.GetMetric()) != 1 || f.GetHelp() == "" {
		t.Fatalf("nudge_llm_request_seconds: %v, want one histogram", f)
	}
	h := f.GetMetric()[0].GetHistogram()
	answered := outcome(m, detector.LLMOK) + outcome(m, detector.LLMError) + outcome(m, detector.LLMTimeout) +
		outcome(m, detector.LLMRefused) + outcome(m, detector.LLMInvalid)
	if float64(h.GetSampleCount()) != answered || h.GetSampleSum() < cfg.LLM.Timeout.Seconds() || len(h.GetBucket()) < 5 {
		t.Errorf("nudge_llm_request_seconds: n=%d sum=%v buckets=%d, want n=%v and the timeout's %v s in the sum",
			h.GetSampleCount(), h.GetSampleSum(), len(h.GetBucket()), answered, cfg.LLM.Timeout.Seconds())
	}
	if f := fams["nudge_llm_requests_total"]; f.GetType() != dto.MetricType_COUNTER || len(f.GetMetric()) != len(detector.LLMOutcomes) {
		t.Errorf("nudge_llm_requests_total: %v, want a counter per outcome", f)
	}
	if f := fams["nudge_llm_overrides_total"]; f.GetType() != dto.MetricType_COUNTER {
		t.Errorf("nudge_llm_overrides_total: %v", f)
	}
}
