package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/nudgehq/nudge"
	eventstream "github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/store"
)

// observer is the daemon's operator-facing side: Prometheus metrics derived from the
// event hub, alerts, and the tmux status line. It owns two goroutines (the hub consumer
// and the status-line writer), started by startObserver and stopped by Close.
type observer struct {
	d     *daemon
	set   *metrics.Set
	start time.Time

	requests, delivered, timeouts, fallbackResume          *metrics.Counter
	tmuxAttempts, tmuxDelivered, tmuxRetries, tmuxTimeouts *metrics.Counter
	alertsTotal                                            *metrics.Counter
	toInjected, toSubmitted, toAcked, deferTime            *metrics.Histogram
	toTyped                                                *metrics.Histogram

	// seen is touched only by the consumer goroutine.
	seen   map[string]*seenTrigger
	closed []string // ids of closed triggers, oldest first, bounding seen

	alerts *alerter
	status *statusLine

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// seenTrigger is what the observer already counted for a trigger.
type seenTrigger struct {
	attempts                                 int
	injected, submitted, acked, deferEnded   bool
	delivered, timedOut, resumed, closedSeen bool
}

const maxClosedTracked = 4096

// newObserver builds the metrics set; startObserver runs it.
func newObserver(d *daemon) *observer {
	s := metrics.NewSet()
	o := &observer{d: d, set: s, start: time.Now(), seen: map[string]*seenTrigger{}}
	o.requests = s.NewCounter("trigger_requests_total")
	o.delivered = s.NewCounter("trigger_delivered_total")
	o.timeouts = s.NewCounter("trigger_timeout_total")
	o.fallbackResume = s.NewCounter("trigger_fallback_resume_total")
	o.tmuxAttempts = s.NewCounter("tmux_trigger_attempt_total")
	o.tmuxDelivered = s.NewCounter("tmux_trigger_delivered_total")
	o.tmuxRetries = s.NewCounter("tmux_trigger_retry_total")
	o.tmuxTimeouts = s.NewCounter("tmux_trigger_timeout_total")
	o.alertsTotal = s.NewCounter("nudge_alerts_total")
	o.toInjected = s.NewHistogram("trigger_request_to_injected_seconds")
	// nudge's own share of a delivery: the API began reading the request → the prompt
	// was written to tmux (no tmux, no pane program in it).
	o.toTyped = s.NewHistogram("trigger_received_to_typed_seconds")
	o.toSubmitted = s.NewHistogram("trigger_injected_to_submitted_seconds")
	o.toAcked = s.NewHistogram("trigger_submitted_to_acked_seconds")
	o.deferTime = s.NewHistogram("trigger_defer_seconds")
	s.RegisterMetricsWriter(o.writeLive)
	return o
}

// startObserver subscribes to the hub and starts the consumer and status-line goroutines.
func startObserver(d *daemon) *observer {
	o := newObserver(d)
	o.alerts = newAlerter(alertConfig{}, time.Now)
	if d.cfg.StatusLine {
		o.status = newStatusLine(d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.cancel = cancel
	sub := d.hub.Subscribe()
	o.wg.Add(1)
	go o.consume(ctx, sub)
	if o.status != nil {
		o.wg.Add(1)
		go func() { defer o.wg.Done(); o.status.run(ctx) }()
		o.status.mark("") // set every workspace's line once
	}
	return o
}

// Close stops the goroutines and waits for them. Idempotent; safe on nil.
func (o *observer) Close() {
	if o == nil || o.cancel == nil {
		return
	}
	o.once.Do(func() {
		o.cancel()
		o.wg.Wait()
	})
}

// consume reads the hub. A subscriber dropped for falling behind resubscribes (counts
// missed in between are lost, never doubled).
func (o *observer) consume(ctx context.Context, sub *eventstream.Subscriber) {
	defer o.wg.Done()
	tick := time.NewTicker(o.alerts.cfg.HeartbeatCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			o.d.hub.Unsubscribe(sub)
			return
		case <-sub.Dropped:
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			o.d.log.Warn("observer fell behind the event hub; resubscribing")
			sub = o.d.hub.Subscribe()
		case ev := <-sub.C:
			o.event(ev)
		case <-tick.C:
			o.raise(o.alerts.heartbeats(o.d.reg.List(), o.expectsHeartbeat))
		}
	}
}

func (o *observer) expectsHeartbeat(rt store.Runtime) bool {
	for _, s := range o.d.profiles[rt.Agent].AckSignals {
		if s == "heartbeat" {
			return true
		}
	}
	return false
}

func (o *observer) event(ev Event) {
	switch ev.Type {
	case "trigger":
		if t, ok := ev.Trigger.(store.Trigger); ok {
			o.trigger(t)
			o.raise(o.alerts.trigger(t))
		}
	case "runtime":
		if rt, ok := ev.Runtime.(store.Runtime); ok && o.status != nil {
			o.status.mark(rt.WorkspaceID)
		}
	case "readiness":
		if o.status != nil {
			var x struct {
				RuntimeID string `json:"runtime_id"`
			}
			if json.Unmarshal(ev.Detail, &x) == nil {
				if rt, ok := o.d.reg.Get(x.RuntimeID); ok {
					o.status.mark(rt.WorkspaceID)
				}
			}
		}
	}
}

// raise publishes alerts on the hub and logs them.
func (o *observer) raise(as []alert) {
	for _, a := range as {
		o.alertsTotal.Inc()
		o.d.log.Warn("alert", "kind", a.Kind, "runtime_id", a.RuntimeID, "message", a.Message)
		ws := ""
		if a.RuntimeID != "" {
			ws = o.d.eventWorkspace(a.RuntimeID)
		}
		o.d.hub.Publish(Event{Type: "alert", Workspace: ws, Detail: mustJSON(a)})
	}
}

// trigger counts a receipt's transitions once each.
func (o *observer) trigger(t store.Trigger) {
	s := o.seen[t.TriggerID]
	if s == nil {
		s = &seenTrigger{}
		o.seen[t.TriggerID] = s
		if !t.CreatedAt.Before(o.start) {
			o.requests.Inc()
		}
	}
	tmux := t.DeliveryBackend == "" || t.DeliveryBackend == nudge.BackendTmux
	if n := t.Attempts - s.attempts; n > 0 && tmux {
		o.tmuxAttempts.Add(n)
		if retries := t.Attempts - max(s.attempts, 1); retries > 0 {
			o.tmuxRetries.Add(retries)
		}
	}
	s.attempts = max(s.attempts, t.Attempts)
	if t.InjectedAt != nil && !s.injected {
		s.injected = true
		o.toInjected.Update(t.InjectedAt.Sub(t.CreatedAt).Seconds())
	}
	if t.SubmittedAt != nil && !s.submitted {
		s.submitted = true
		if t.InjectedAt != nil {
			o.toSubmitted.Update(t.SubmittedAt.Sub(*t.InjectedAt).Seconds())
		}
	}
	if t.AckedAt != nil && !s.acked {
		s.acked = true
		if t.SubmittedAt != nil {
			o.toAcked.Update(t.AckedAt.Sub(*t.SubmittedAt).Seconds())
		}
	}
	if t.DeferredAt != nil && !s.deferEnded && t.State != string(nudge.StateDeferred) && t.State != string(nudge.StateQueued) {
		s.deferEnded = true
		end := t.UpdatedAt
		if t.InjectedAt != nil {
			end = *t.InjectedAt
		}
		o.deferTime.Update(end.Sub(*t.DeferredAt).Seconds())
	}
	switch nudge.Result(t.Result) {
	case nudge.ResultDelivered:
		if !s.delivered {
			s.delivered = true
			o.delivered.Inc()
			if tmux {
				o.tmuxDelivered.Inc()
			}
		}
	case nudge.ResultTimeout:
		if !s.timedOut {
			s.timedOut = true
			o.timeouts.Inc()
			if tmux {
				o.tmuxTimeouts.Inc()
			}
		}
	}
	if t.Fallback == "resume" && !s.resumed {
		s.resumed = true
		o.fallbackResume.Inc()
	}
	if t.Closed && !s.closedSeen {
		s.closedSeen = true
		o.closed = append(o.closed, t.TriggerID)
		if len(o.closed) > maxClosedTracked {
			delete(o.seen, o.closed[0])
			o.closed = o.closed[1:]
		}
	}
}

// writeLive writes the values read at scrape time: registry counters and gauges.
func (o *observer) writeLive(w io.Writer) {
	d := o.d
	st := d.reg.Stats()
	metrics.WriteCounterUint64(w, "tmux_runtime_restart_total", uint64(st.Restarts))
	metrics.WriteCounterUint64(w, "tmux_reconcile_drift_total", uint64(st.Drifts))
	metrics.WriteCounterUint64(w, "tmux_pane_death_total", uint64(st.PaneDeaths))
	metrics.WriteCounterUint64(w, "tmux_crash_loop_total", uint64(st.CrashLoops))
	metrics.WriteCounterUint64(w, "tmux_reconcile_sweep_total", uint64(st.Sweeps))
	metrics.WriteCounterUint64(w, "nudge_controlmode_dials_total", uint64(st.Dials))
	metrics.WriteCounterUint64(w, "nudge_controlmode_pause_total", uint64(st.Pauses))
	metrics.WriteGaugeFloat64(w, "nudge_controlmode_lag_seconds", st.Lag.Seconds())
	metrics.WriteCounterUint64(w, "nudge_store_commit_errors_total", d.db.CommitErrors())
	unavailable := 0.0
	if d.db.Unavailable() != nil {
		unavailable = 1
	}
	metrics.WriteGaugeFloat64(w, "nudge_store_unavailable", unavailable)

	rts := d.reg.List()
	byStatus := map[string]int{}
	byReadiness := map[string]int{}
	for _, s := range []nudge.Status{nudge.StatusStarting, nudge.StatusReady, nudge.StatusTriggering, nudge.StatusAwaitingAck,
		nudge.StatusRetrying, nudge.StatusFallbackResume, nudge.StatusSpawnRecovery, nudge.StatusFailed,
		nudge.StatusOffline, nudge.StatusPaused, nudge.StatusExited} {
		byStatus[string(s)] = 0
	}
	for _, r := range []nudge.Readiness{nudge.Ready, nudge.Busy, nudge.NeedsConfirmation, nudge.ErrorState, nudge.Unknown} {
		byReadiness[string(r)] = 0
	}
	busy := 0
	for _, rt := range rts {
		byStatus[rt.Status]++
		byReadiness[orDefault(rt.Readiness, string(nudge.Unknown))]++
		if rt.OperatorBusy {
			busy++
		}
	}
	writeLabelled(w, "nudge_runtimes", "status", byStatus)
	writeLabelled(w, "nudge_runtimes_readiness", "readiness", byReadiness)
	metrics.WriteGaugeUint64(w, "nudge_runtimes_operator_busy", uint64(busy))
	for _, rt := range rts {
		metrics.WriteGaugeUint64(w, fmt.Sprintf("trigger_queue_depth{runtime=%q}", promLabel(rt.RuntimeID)), uint64(d.pipe.Depth(rt.RuntimeID)))
	}
	metrics.WriteGaugeFloat64(w, "nudge_uptime_seconds", time.Since(d.started).Seconds())
}

func writeLabelled(w io.Writer, name, label string, m map[string]int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		metrics.WriteGaugeUint64(w, fmt.Sprintf("%s{%s=%q}", name, label, promLabel(k)), uint64(m[k]))
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

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// handleMetrics serves the Prometheus text format (on the socket and on --metrics-addr).
func (d *daemon) handleMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	if d.obs == nil {
		return
	}
	d.obs.set.WritePrometheus(w)
	metrics.WriteGaugeUint64(w, "go_goroutines", uint64(runtime.NumGoroutine()))
}

// Request ids: every API request gets one (X-Request-Id, or a fresh random one), kept in
// its context and logged on trigger lines.

type requestIDKey struct{}

// withRequestID gives the request its id (X-Request-Id if sane, else a fresh one) and
// the time the daemon began handling it.
func withRequestID(r *http.Request, received time.Time) *http.Request {
	id := r.Header.Get("X-Request-Id")
	if id == "" || len(id) > 64 || strings.ContainsFunc(id, func(c rune) bool { return c <= ' ' || c > '~' }) {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id = "req_" + hex.EncodeToString(b[:])
	}
	ctx := context.WithValue(r.Context(), requestIDKey{}, requestInfo{id, received})
	return r.WithContext(ctx)
}

type requestInfo struct {
	id       string
	received time.Time
}

func requestReceived(ctx context.Context) time.Time {
	info, _ := ctx.Value(requestIDKey{}).(requestInfo)
	return info.received
}

func requestID(ctx context.Context) string {
	info, _ := ctx.Value(requestIDKey{}).(requestInfo)
	return info.id
}

// logTrigger writes the one info line per trigger request.
func (d *daemon) logTrigger(r *http.Request, t store.Trigger, created bool) {
	d.log.Info("trigger request", "request_id", requestID(r.Context()), "trigger_id", t.TriggerID,
		"thread_id", t.ThreadID, "agent_id", t.Agent, "runtime_id", t.RuntimeID, "workspace", t.WorkspaceID,
		"state", t.State, "result", t.Result, "error_code", t.ErrorCode, "fallback_used", t.Fallback != "",
		"created", created)
}
