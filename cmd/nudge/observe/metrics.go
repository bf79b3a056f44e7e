package observe

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/detector"
	"github.com/nudgehq/nudge/panes"
	"github.com/nudgehq/nudge/store"
)

// LatencyBuckets are the upper bounds (seconds) of the trigger latency histograms: from
// nudge's own share of a delivery (a few hundred µs) through tmux's reply (ms) and the
// submit check (tens of ms) to an agent's answer (seconds, up to a minute).
// Below 1 ms, where nudge's own share lies, they are at most 50 % apart.
var LatencyBuckets = []float64{
	50e-6, 100e-6, 150e-6, 200e-6, 250e-6, 300e-6, 400e-6, 500e-6, 750e-6,
	1e-3, 1.5e-3, 2e-3, 3e-3, 5e-3, 7.5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3,
	1, 2.5, 5, 10, 30, 60,
}

// LatencyMSBuckets are LatencyBuckets in milliseconds: the upper bounds of
// trigger_latency_ms, seed 000 §16's name and unit.
var LatencyMSBuckets = func() []float64 {
	ms := make([]float64, len(LatencyBuckets))
	for i, b := range LatencyBuckets {
		ms[i] = b * 1000
	}
	return ms
}()

// DeferBuckets are the upper bounds (seconds) of trigger_defer_seconds: a deferred
// trigger waits for the pane to go quiet or its human to finish, up to --max-defer.
var DeferBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// LLMBuckets are the upper bounds (seconds) of nudge_llm_request_seconds: a hosted
// model answers in a fraction of a second to tens of seconds (--llm-timeout is 20s).
var LLMBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 60}

// help is each family's # HELP text. The metrics library writes HELP lines without
// text; writeHelp fills them in from here.
var help = map[string]string{
	"trigger_requests_total":                "Trigger requests accepted.",
	"trigger_delivered_total":               "Triggers whose result became delivered (acknowledged; each trigger counts once, in this or trigger_timeout_total).",
	"trigger_timeout_total":                 "Triggers whose result became timeout.",
	"trigger_fallback_resume_total":         "Triggers that fell back to the agent's resume command.",
	"tmux_trigger_attempt_total":            "Delivery attempts into tmux panes.",
	"tmux_trigger_delivered_total":          "Triggers delivered through tmux (trigger_delivered_total for the tmux backend).",
	"tmux_trigger_retry_total":              "Delivery attempts after a trigger's first one.",
	"tmux_trigger_timeout_total":            "Triggers through tmux whose result became timeout.",
	"nudge_alerts_total":                    "Alerts raised (timeout ratio, fallback spike, stale heartbeat).",
	"nudge_observer_dropped_total":          "Receipt updates the observer dropped for falling behind (not counted above).",
	"trigger_latency_seconds":               "Request to the prompt submitted in the pane, per delivered trigger (in seconds; trigger_latency_ms is the seed's figure, to the ack).",
	"trigger_latency_ms":                    "Request to delivery, to the agent's ack (delivered_at), per delivered trigger, in milliseconds.",
	"trigger_request_to_injected_seconds":   "Request to the prompt typed into the pane.",
	"trigger_received_to_typed_seconds":     "nudge's own share: the API began reading the request to the prompt written to tmux.",
	"trigger_injected_to_submitted_seconds": "Prompt typed to Enter confirmed.",
	"trigger_submitted_to_acked_seconds":    "Enter confirmed to the agent's ack.",
	"trigger_defer_seconds":                 "Time a trigger waited deferred (busy pane, human typing).",
	"tmux_runtime_restart_total":            "Runtime restarts started.",
	"tmux_reconcile_drift_total":            "Runtimes whose pane went missing (REGISTRY_DRIFT).",
	"tmux_pane_death_total":                 "Managed panes seen dead.",
	"tmux_crash_loop_total":                 "Runtimes marked failed for crash-looping.",
	"tmux_reconcile_sweep_total":            "Reconcile passes over the registry.",
	"nudge_controlmode_dials_total":         "Control connections established (reconnects = dials - workspaces).",
	"nudge_controlmode_pause_total":         "%pause notifications: tmux paused a pane for a slow control client.",
	"nudge_controlmode_lag_seconds":         "Age of the latest %extended-output: how far behind the stream is.",
	"nudge_store_commit_errors_total":       "Store writes that failed.",
	"nudge_store_unavailable":               "1 while the store cannot write (new triggers are refused).",
	"nudge_store_file_bytes":                "Size of the store's file (nudge.db); bounded by --retain, shrunk by a start that compacts it.",
	"nudge_store_free_bytes":                "Free pages inside the store's file: reused by later writes, given back by a start that compacts (--compact-free).",
	"nudge_store_warn_bytes":                "The store file size --store-warn-size warns past (absent without a bound): alert on nudge_store_file_bytes > nudge_store_warn_bytes.",
	"nudge_runtimes":                        "Runtimes by lifecycle status.",
	"nudge_runtimes_readiness":              "Runtimes by detected readiness.",
	"nudge_runtimes_operator_busy":          "Runtimes whose pane a human is typing in.",
	"trigger_queue_depth":                   "Triggers waiting in a runtime's lane.",
	"nudge_uptime_seconds":                  "Seconds since the daemon started.",
	"nudge_events_last_seq":                 "Sequence number of the newest event on /v1/events (it survives restarts).",
	"nudge_events_unwritten":                "Events numbered but not yet in the store (held in memory while it cannot write).",
	"nudge_events_lost_total":               "Events dropped because the store could not write them: a replay from before them answers EVENTS_EXPIRED.",
	"nudge_notifications_total":             "Notifications handed to a tmux message or --notify-command.",
	"nudge_notifications_dropped_total":     "Notifications dropped because their pool (--notify-max) was full.",
	"go_goroutines":                         "Goroutines in the daemon.",
	"nudge_llm_requests_total":              "Questions to the LLM classifier (--llm-url) by outcome: ok, error (connection, 5xx), timeout, refused (a 4xx), invalid (an answer that is no verdict), canceled (the screen changed or the pane went first).",
	"nudge_llm_request_seconds":             "Time a question to the LLM classifier took, retries included (canceled ones not observed).",
	"nudge_llm_overrides_total":             "LLM verdicts that named another readiness state than the rules' unsure verdict on the same screen.",
}

// Metrics is the daemon's Prometheus registry: counters and histograms fed from trigger
// receipts (Count, ObserveTyped) and gauges read at scrape time (WritePrometheus). Its
// methods are safe for concurrent use except Count, which one goroutine calls (the
// Observer's consumer). It has no goroutine.
type Metrics struct {
	set   *metrics.Set
	start time.Time

	requests, delivered, timeouts, fallbackResume          *metrics.Counter
	tmuxAttempts, tmuxDelivered, tmuxRetries, tmuxTimeouts *metrics.Counter
	alerts, dropped                                        *metrics.Counter
	llmCalls                                               map[detector.LLMOutcome]*metrics.Counter
	llmOverrides                                           *metrics.Counter
	latency, toInjected, toTyped, toSubmitted, toAcked     *Histogram
	latencyMS                                              *Histogram // seed 000 §16 trigger_latency_ms: request → ack
	deferTime, llmTime                                     *Histogram
	histograms                                             []*Histogram // in the order written

	// seen is what was counted per trigger; touched only by Count's goroutine.
	seen   map[string]*seenTrigger
	closed []string // ids of closed triggers, oldest first, bounding seen
}

// seenTrigger is what Count already counted for a trigger.
type seenTrigger struct {
	attempts                                 int
	injected, submitted, acked, deferEnded   bool
	delivered, timedOut, resumed, closedSeen bool
}

const maxClosedTracked = 4096

// NewMetrics returns an empty registry of its own (two daemons in one process share
// nothing). Receipts of triggers created before start are not counted as requests.
func NewMetrics(start time.Time) *Metrics {
	metrics.ExposeMetadata(true) // # HELP and # TYPE lines: stock Prometheus wants them
	s := metrics.NewSet()
	m := &Metrics{set: s, start: start, seen: map[string]*seenTrigger{}}
	m.requests = s.NewCounter("trigger_requests_total")
	m.delivered = s.NewCounter("trigger_delivered_total")
	m.timeouts = s.NewCounter("trigger_timeout_total")
	m.fallbackResume = s.NewCounter("trigger_fallback_resume_total")
	m.tmuxAttempts = s.NewCounter("tmux_trigger_attempt_total")
	m.tmuxDelivered = s.NewCounter("tmux_trigger_delivered_total")
	m.tmuxRetries = s.NewCounter("tmux_trigger_retry_total")
	m.tmuxTimeouts = s.NewCounter("tmux_trigger_timeout_total")
	m.alerts = s.NewCounter("nudge_alerts_total")
	m.dropped = s.NewCounter("nudge_observer_dropped_total")
	hist := func(name string, bounds []float64) *Histogram {
		h := NewHistogram(name, bounds)
		m.histograms = append(m.histograms, h)
		return h
	}
	m.deferTime = hist("trigger_defer_seconds", DeferBuckets)
	m.toInjected = hist("trigger_request_to_injected_seconds", LatencyBuckets)
	m.latency = hist("trigger_latency_seconds", LatencyBuckets)
	m.latencyMS = hist("trigger_latency_ms", LatencyMSBuckets)
	m.toTyped = hist("trigger_received_to_typed_seconds", LatencyBuckets)
	m.toSubmitted = hist("trigger_injected_to_submitted_seconds", LatencyBuckets)
	m.toAcked = hist("trigger_submitted_to_acked_seconds", LatencyBuckets)
	m.llmCalls = map[detector.LLMOutcome]*metrics.Counter{}
	for _, o := range detector.LLMOutcomes {
		m.llmCalls[o] = s.NewCounter(`nudge_llm_requests_total{outcome="` + string(o) + `"}`)
	}
	m.llmOverrides = s.NewCounter("nudge_llm_overrides_total")
	m.llmTime = hist("nudge_llm_request_seconds", LLMBuckets)
	return m
}

// ObserveLLM records one question to the LLM classifier: its outcome, its time unless
// it was canceled (nudge withdrew it: its time says nothing of the model), and whether
// its verdict overrode the rules'.
func (m *Metrics) ObserveLLM(c detector.LLMCall) {
	ctr := m.llmCalls[c.Outcome]
	if ctr == nil {
		ctr = m.llmCalls[detector.LLMError]
	}
	ctr.Inc()
	if c.Outcome != detector.LLMCanceled {
		m.llmTime.Update(max(c.Took.Seconds(), 0))
	}
	if c.Override {
		m.llmOverrides.Inc()
	}
}

// ObserveTyped records nudge's own share of one delivery: the API began reading the
// request → the prompt was written to tmux.
func (m *Metrics) ObserveTyped(took time.Duration) { m.toTyped.Update(max(took.Seconds(), 0)) }

// Count counts a receipt's transitions, each once per trigger however often it is seen.
func (m *Metrics) Count(t nudge.Trigger) {
	s := m.seen[t.TriggerID]
	if s == nil {
		s = &seenTrigger{}
		m.seen[t.TriggerID] = s
		if !t.CreatedAt.Before(m.start) {
			m.requests.Inc()
		}
	}
	tmux := t.DeliveryBackend == "" || t.DeliveryBackend == nudge.BackendTmux
	if n := t.Attempts - s.attempts; n > 0 && tmux {
		m.tmuxAttempts.Add(n)
		if retries := t.Attempts - max(s.attempts, 1); retries > 0 {
			m.tmuxRetries.Add(retries)
		}
	}
	s.attempts = max(s.attempts, t.Attempts)
	m.stages(t, s)
	m.results(t, s, tmux)
	if t.Closed && !s.closedSeen {
		s.closedSeen = true
		m.closed = append(m.closed, t.TriggerID)
		if len(m.closed) > maxClosedTracked {
			delete(m.seen, m.closed[0])
			m.closed = m.closed[1:]
		}
	}
}

// stages records the stage latencies a receipt newly shows.
func (m *Metrics) stages(t nudge.Trigger, s *seenTrigger) {
	if t.InjectedAt != nil && !s.injected {
		s.injected = true
		observe(m.toInjected, t.CreatedAt, *t.InjectedAt)
	}
	if t.SubmittedAt != nil && !s.submitted {
		s.submitted = true
		if t.InjectedAt != nil {
			observe(m.toSubmitted, *t.InjectedAt, *t.SubmittedAt)
		}
	}
	if t.AckedAt != nil && !s.acked {
		s.acked = true
		if t.SubmittedAt != nil {
			observe(m.toAcked, *t.SubmittedAt, *t.AckedAt)
		}
	}
	if t.DeferredAt != nil && !s.deferEnded && t.State != nudge.StateDeferred && t.State != nudge.StateQueued {
		s.deferEnded = true
		end := t.UpdatedAt
		if t.InjectedAt != nil {
			end = *t.InjectedAt
		}
		observe(m.deferTime, *t.DeferredAt, end)
	}
}

// results counts a receipt's result once, and a delivered one's latencies: request →
// submitted (trigger_latency_seconds) and request → delivered_at, the ack or a fallback
// launch's accepted start (trigger_latency_ms, the seed's).
func (m *Metrics) results(t nudge.Trigger, s *seenTrigger, tmux bool) {
	switch t.Result {
	case nudge.ResultDelivered:
		if !s.delivered {
			s.delivered = true
			m.delivered.Inc()
			if tmux {
				m.tmuxDelivered.Inc()
			}
			end := t.UpdatedAt
			if t.SubmittedAt != nil {
				end = *t.SubmittedAt
			}
			observe(m.latency, t.CreatedAt, end)
			if t.DeliveredAt != nil {
				end = *t.DeliveredAt
			}
			m.latencyMS.Update(max(float64(end.Sub(t.CreatedAt))/float64(time.Millisecond), 0))
		}
	case nudge.ResultTimeout:
		if !s.timedOut {
			s.timedOut = true
			m.timeouts.Inc()
			if tmux {
				m.tmuxTimeouts.Inc()
			}
		}
	}
	if t.Fallback == "resume" && !s.resumed {
		s.resumed = true
		m.fallbackResume.Inc()
	}
}

func observe(h *Histogram, from, to time.Time) {
	h.Update(max(to.Sub(from).Seconds(), 0))
}

// Live is what WritePrometheus reads at scrape time. Every field may be nil.
type Live struct {
	Runtimes   func() []nudge.Runtime
	Stats      func() panes.StatsSnapshot
	Store      StoreHealth
	QueueDepth func(runtimeID string) int
	Started    time.Time
	// EventSeq is the newest event's sequence number (events.Hub.Last).
	EventSeq func() uint64
	// EventWrites are the events not yet in the store and those dropped, ever, because
	// it could not write them (events.Hub.Stats).
	EventWrites func() (unwritten, lost uint64)
	// Notifications are the notifications handed to a display or command, and those
	// dropped for a full pool (notify.Notifier.Sent, Dropped).
	Notifications func() (sent, dropped uint64)
	// StoreWarnSize is serve --store-warn-size, written as nudge_store_warn_bytes beside
	// the store file's size; 0 writes nothing.
	StoreWarnSize int64
}

// StoreHealth is the store's write health; *store.DB is one.
type StoreHealth interface {
	CommitErrors() uint64
	Unavailable() error
}

var _ StoreHealth = (*store.DB)(nil)

// WritePrometheus writes every metric in the Prometheus text format (0.0.4), with
// # HELP and # TYPE lines: the counters, the histograms, then live's values.
func (m *Metrics) WritePrometheus(w io.Writer, live Live) error {
	var b bytes.Buffer
	m.set.WritePrometheus(&b)
	for _, h := range m.histograms {
		metrics.WriteMetadataIfNeeded(&b, h.name, "histogram")
		h.writeTo(&b)
	}
	writeLive(&b, live)
	return writeHelp(w, &b)
}

// writeHelp copies b to w with each empty "# HELP name" line given its text.
func writeHelp(w io.Writer, b *bytes.Buffer) error {
	bw := bufio.NewWriter(w)
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "# HELP "); ok && !strings.Contains(name, " ") {
			if h := help[name]; h != "" {
				line = "# HELP " + name + " " + h + "\n"
			}
		}
		bw.WriteString(line)
	}
	return bw.Flush()
}

// writeLive writes the values read at scrape time: registry counters and gauges.
func writeLive(w io.Writer, l Live) {
	if l.Stats != nil {
		st := l.Stats()
		metrics.WriteCounterUint64(w, "tmux_runtime_restart_total", uint64(st.Restarts))
		metrics.WriteCounterUint64(w, "tmux_reconcile_drift_total", uint64(st.Drifts))
		metrics.WriteCounterUint64(w, "tmux_pane_death_total", uint64(st.PaneDeaths))
		metrics.WriteCounterUint64(w, "tmux_crash_loop_total", uint64(st.CrashLoops))
		metrics.WriteCounterUint64(w, "tmux_reconcile_sweep_total", uint64(st.Sweeps))
		metrics.WriteCounterUint64(w, "nudge_controlmode_dials_total", uint64(st.Dials))
		metrics.WriteCounterUint64(w, "nudge_controlmode_pause_total", uint64(st.Pauses))
		metrics.WriteGaugeFloat64(w, "nudge_controlmode_lag_seconds", st.Lag.Seconds())
	}
	if l.Store != nil {
		metrics.WriteCounterUint64(w, "nudge_store_commit_errors_total", l.Store.CommitErrors())
		unavailable := uint64(0)
		if l.Store.Unavailable() != nil {
			unavailable = 1
		}
		metrics.WriteGaugeUint64(w, "nudge_store_unavailable", unavailable)
		if sp, ok := l.Store.(interface{ Space() store.Space }); ok {
			space := sp.Space()
			metrics.WriteGaugeUint64(w, "nudge_store_file_bytes", uint64(space.File))
			metrics.WriteGaugeUint64(w, "nudge_store_free_bytes", uint64(space.Free))
		}
		if l.StoreWarnSize > 0 {
			metrics.WriteGaugeUint64(w, "nudge_store_warn_bytes", uint64(l.StoreWarnSize))
		}
	}
	if l.Runtimes != nil {
		writeRuntimes(w, l.Runtimes(), l.QueueDepth)
	}
	if l.EventSeq != nil {
		metrics.WriteGaugeUint64(w, "nudge_events_last_seq", l.EventSeq())
	}
	if l.EventWrites != nil {
		unwritten, lost := l.EventWrites()
		metrics.WriteGaugeUint64(w, "nudge_events_unwritten", unwritten)
		metrics.WriteCounterUint64(w, "nudge_events_lost_total", lost)
	}
	if l.Notifications != nil {
		sent, dropped := l.Notifications()
		metrics.WriteCounterUint64(w, "nudge_notifications_total", sent)
		metrics.WriteCounterUint64(w, "nudge_notifications_dropped_total", dropped)
	}
	if !l.Started.IsZero() {
		metrics.WriteGaugeFloat64(w, "nudge_uptime_seconds", time.Since(l.Started).Seconds())
	}
	metrics.WriteGaugeUint64(w, "go_goroutines", uint64(runtime.NumGoroutine()))
}

var (
	allStatuses = []nudge.Status{nudge.StatusStarting, nudge.StatusReady, nudge.StatusTriggering, nudge.StatusAwaitingAck,
		nudge.StatusRetrying, nudge.StatusFallbackResume, nudge.StatusSpawnRecovery, nudge.StatusFailed,
		nudge.StatusOffline, nudge.StatusPaused, nudge.StatusExited}
	allReadiness = []nudge.Readiness{nudge.Ready, nudge.Busy, nudge.NeedsConfirmation, nudge.ErrorState, nudge.Unknown}
)

// writeRuntimes writes the runtime gauges: by status and readiness (every value, zeros
// included), operator-busy, and each runtime's queue depth.
func writeRuntimes(w io.Writer, rts []nudge.Runtime, depth func(string) int) {
	byStatus := map[string]int{}
	byReadiness := map[string]int{}
	for _, s := range allStatuses {
		byStatus[string(s)] = 0
	}
	for _, r := range allReadiness {
		byReadiness[string(r)] = 0
	}
	busy := 0
	for _, rt := range rts {
		byStatus[string(rt.Status)]++
		readiness := string(rt.Readiness)
		if readiness == "" {
			readiness = string(nudge.Unknown)
		}
		byReadiness[readiness]++
		if rt.OperatorBusy {
			busy++
		}
	}
	writeLabelled(w, "nudge_runtimes", "status", byStatus)
	writeLabelled(w, "nudge_runtimes_readiness", "readiness", byReadiness)
	metrics.WriteGaugeUint64(w, "nudge_runtimes_operator_busy", uint64(busy))
	if depth == nil || len(rts) == 0 {
		return
	}
	metrics.WriteMetadataIfNeeded(w, "trigger_queue_depth", "gauge")
	for _, rt := range rts {
		fmt.Fprintf(w, "trigger_queue_depth{runtime=%q} %d\n", promLabel(rt.RuntimeID), depth(rt.RuntimeID))
	}
}

// writeLabelled writes one gauge family with one label, its # HELP/# TYPE once.
func writeLabelled(w io.Writer, name, label string, m map[string]int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	metrics.WriteMetadataIfNeeded(w, name, "gauge")
	for _, k := range keys {
		fmt.Fprintf(w, "%s{%s=%q} %d\n", name, label, promLabel(k), m[k])
	}
}

// promLabel keeps a label value within what %q and the Prometheus text format agree on.
func promLabel(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == '"' || r == '\\' || r > 0x7e {
			return '_'
		}
		return r
	}, s)
}
