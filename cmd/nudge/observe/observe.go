// Package observe is the daemon's operator-facing side: what an operator watches, built
// only from what it is handed.
//
//   - Metrics: the Prometheus registry. Counters and latency histograms (cumulative le
//     buckets) fed from trigger receipts, gauges read at scrape time; WritePrometheus
//     writes the text format with # HELP and # TYPE lines.
//   - Alerter: seed 000 §16's alerts (timeout ratio, fallback spike, stale heartbeats).
//   - StatusLine: the status-right of each agents_<ws> tmux session, kept to the
//     workspace's short status through its control connection.
//   - Observer: wires the three together. It reads each receipt change (Trigger) and
//     each workspace whose runtimes changed (Workspace) on the daemon's bus; one
//     goroutine counts, checks alerts and heartbeats, and publishes alerts (Alert).
//
// Ownership: New starts the Observer's goroutine and, when configured, the StatusLine's;
// Close stops and joins both. Nothing here holds the daemon: every input is a func or a
// small interface in Config.
package observe

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/detector"
)

// Config is what an Observer reads and whom it tells. Every field may be left zero
// (DefaultConfig's values are then used where it has one).
type Config struct {
	// Live is read at scrape time (gauges, registry counters). Live.Runtimes is also
	// what heartbeats are checked on.
	Live Live
	// ExpectsHeartbeat says whether a runtime's profile sends heartbeats; nil: none does.
	ExpectsHeartbeat func(nudge.Runtime) bool
	// Bus: from New the Observer reads receipt changes (nudge.TriggerChanged), the
	// workspaces whose runtimes changed (nudge.RuntimeChanged, ReadinessChanged), typing
	// times (nudge.TriggerTyped) and LLM questions (detector.LLMCall) on it, and
	// publishes its alerts (Alert; each logged and counted first). nil: it is fed by hand
	// (Trigger, Workspace, ...) and its alerts are logged only.
	Bus *nudge.Bus
	// Status, when set, runs a StatusLine.
	Status *StatusConfig
	// Alerts are the alert thresholds (zero fields: DefaultAlertConfig).
	Alerts AlertConfig
	// Logger gets the alert lines and the observer's own warnings; nil: none.
	Logger hclog.Logger
	// Now is the clock of the alerts; nil: time.Now.
	Now func() time.Time
	// Inbox is how many receipt changes may wait for the goroutine before new ones are
	// dropped (and counted in nudge_observer_dropped_total); 0: 1024.
	Inbox int
}

// DefaultConfig returns the defaults: the alert thresholds nudge runs with, a 1024-change
// inbox and the wall clock. The daemon fills in the inputs.
func DefaultConfig() Config {
	return Config{Alerts: DefaultAlertConfig(), Now: time.Now, Inbox: 1024}
}

// Validate reports a config New cannot run.
func (c Config) Validate() error {
	if c.Status != nil && (c.Status.Workspaces == nil || c.Status.Line == nil || c.Status.Conn == nil) {
		return errors.New("observe: status line needs Workspaces, Line and Conn")
	}
	if c.Inbox < 0 {
		return errors.New("observe: negative Inbox")
	}
	return nil
}

// Observer counts receipts into Metrics, raises alerts and keeps the status line. Its
// methods are safe for concurrent use and never block.
type Observer struct {
	cfg     Config
	metrics *Metrics
	alerts  *Alerter
	status  *StatusLine
	in      chan nudge.Trigger
	sub     *nudge.Client // what it reads on the Bus

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// New builds the metrics and starts the goroutines; the caller calls Close.
func New(cfg Config) (*Observer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	def := DefaultConfig()
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Now == nil {
		cfg.Now = def.Now
	}
	if cfg.Inbox == 0 {
		cfg.Inbox = def.Inbox
	}
	o := &Observer{cfg: cfg, metrics: NewMetrics(cfg.Now()), alerts: NewAlerter(cfg.Alerts, cfg.Now),
		in: make(chan nudge.Trigger, cfg.Inbox), done: make(chan struct{})}
	if cfg.Status != nil {
		sc := *cfg.Status
		if sc.Logger == nil {
			sc.Logger = cfg.Logger
		}
		s, err := NewStatusLine(sc)
		if err != nil {
			return nil, err
		}
		o.status = s
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.cancel = cancel
	go o.run(ctx)
	o.sub = nudge.NewClient(cfg.Bus, "observe", 1024)
	nudge.Subscribe(o.sub, func(ev nudge.TriggerChanged) { o.Trigger(ev.Trigger) })
	// A workspace's status line is recomputed from the registry: one mark of it is enough.
	nudge.SubscribeLatest(o.sub, func(ev nudge.RuntimeChanged) string { return ev.Runtime.WorkspaceID },
		func(ev nudge.RuntimeChanged) { o.Workspace(ev.Runtime.WorkspaceID) })
	nudge.SubscribeLatest(o.sub, func(ev nudge.ReadinessChanged) string { return ev.Workspace },
		func(ev nudge.ReadinessChanged) { o.Workspace(ev.Workspace) })
	nudge.Subscribe(o.sub, func(ev nudge.TriggerTyped) { o.ObserveTyped(ev.Took) })
	nudge.Subscribe(o.sub, o.ObserveLLM)
	return o, nil
}

// Close stops the goroutines and waits for them. Idempotent; safe on nil.
func (o *Observer) Close() {
	if o == nil {
		return
	}
	o.once.Do(func() {
		o.sub.Close()
		o.cancel()
		<-o.done
		o.status.Close()
	})
}

// Trigger hands the observer a receipt (a trigger's new state). If the goroutine is too
// far behind, the change is dropped and counted; a later change of the same trigger
// still counts what it shows.
func (o *Observer) Trigger(t nudge.Trigger) {
	select {
	case o.in <- t:
	default:
		o.metrics.dropped.Inc()
	}
}

// Workspace says ws's runtimes changed (status, readiness, queue): its status line is
// recomputed. "" means every workspace.
func (o *Observer) Workspace(ws string) { o.status.Mark(ws) }

// ObserveTyped records nudge's own share of one delivery (see Metrics.ObserveTyped).
func (o *Observer) ObserveTyped(took time.Duration) { o.metrics.ObserveTyped(took) }

// ObserveLLM records one question to the LLM classifier (see Metrics.ObserveLLM).
func (o *Observer) ObserveLLM(c detector.LLMCall) { o.metrics.ObserveLLM(c) }

// WritePrometheus writes every metric in the Prometheus text format.
func (o *Observer) WritePrometheus(w io.Writer) error {
	return o.metrics.WritePrometheus(w, o.cfg.Live)
}

func (o *Observer) run(ctx context.Context) {
	defer close(o.done)
	tick := time.NewTicker(o.alerts.cfg.HeartbeatCheck)
	defer tick.Stop()
	var warned uint64
	for {
		select {
		case <-ctx.Done():
			return
		case t := <-o.in:
			o.metrics.Count(t)
			o.raise(o.alerts.Trigger(t))
		case <-tick.C:
			if o.cfg.Live.Runtimes != nil {
				o.raise(o.alerts.Heartbeats(o.cfg.Live.Runtimes(), o.cfg.ExpectsHeartbeat))
			}
		}
		if n := o.metrics.dropped.Get(); n != warned {
			o.cfg.Logger.Warn("observer fell behind: receipt changes dropped from the metrics", "dropped_total", n)
			warned = n
		}
	}
}

// raise counts, logs and publishes alerts.
func (o *Observer) raise(as []Alert) {
	for _, a := range as {
		o.metrics.alerts.Inc()
		o.cfg.Logger.Warn("alert", "kind", a.Kind, "runtime_id", a.RuntimeID, "message", a.Message)
		nudge.Publish(o.cfg.Bus, a)
	}
}
