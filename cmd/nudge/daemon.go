package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/ack"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	eventstream "github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/cmd/nudge/notify"
	"github.com/nudgehq/nudge/cmd/nudge/observe"
	"github.com/nudgehq/nudge/cmd/nudge/server"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/detector"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/panes"
	"github.com/nudgehq/nudge/store"
)

// daemon is a running `nudge serve`: the store, the registry with its control
// connections, the trigger pipeline, the ack tracker and the API server. Main-style
// lifecycle: openDaemon, Run, Close.
type daemon struct {
	cfg     serveConfig
	log     hclog.Logger
	started time.Time

	db       *store.DB
	reg      *panes.Registry
	pipe     *inject.Pipeline
	acks     *ack.Tracker
	chain    *ack.Chain
	mon      *detector.Monitor
	sched    *inject.Scheduler
	hub      *eventstream.Hub
	notify   *notify.Notifier // tmux messages and --notify-command (events.go)
	profiles map[string]panes.Profile
	auth     *auth.Authority   // token key, revocations, runtime tokens, policy
	obs      *observe.Observer // metrics, alerts, status line (observer.go)

	api *server.Server

	ready     atomic.Bool // hooks act only once everything is wired
	closeOnce sync.Once
}

// openDaemon opens everything in dependency order; on error it closes what it opened.
func openDaemon(ctx context.Context, cfg serveConfig, env *cliEnv) (_ *daemon, err error) {
	d := &daemon{cfg: cfg, log: newLogger(cfg, env), started: time.Now()}
	defer func() {
		// d, not the result: an early `return nil, err` must still close what was opened.
		if err != nil {
			d.Close()
		}
	}()
	if d.db, err = store.Open(filepath.Join(cfg.StateDir, "nudge.db"), d.storeOptions()); err != nil {
		if errors.Is(err, store.ErrLocked) {
			return nil, fmt.Errorf("another nudge daemon is using %s (stop it first, or give this one another --state-dir)", cfg.StateDir)
		}
		return nil, err
	}
	if d.hub, err = eventstream.Open(d.eventsConfig(), d.db); err != nil {
		return nil, err
	}
	if d.auth, err = openAuthority(cfg, d.db); err != nil {
		return nil, err
	}
	if d.profiles, err = panes.LoadProfiles(cfg.ProfileDir); err != nil {
		return nil, err
	}
	profileOverrides(cfg.ProfileDir, d.profiles).log(d.log)
	d.acks = ack.NewTracker(ack.TrackerConfig{Signals: d.ackSignals})
	if d.reg, err = panes.Open(ctx, d.registryConfig(), d.db); err != nil {
		return nil, fmt.Errorf("open registry: %w", err)
	}
	d.chain = ack.NewChain(d.chainConfig(), d.reg, d.db)
	if d.mon, err = d.openMonitor(); err != nil {
		return nil, err
	}
	ic := d.injectConfig()
	if d.cleanStart() {
		// The last daemon stopped cleanly: nothing can have been typed and not recorded, so
		// new triggers skip looking for their envelope in the pane first.
		ic.RedeliveryCheck = -1
	}
	if d.pipe, err = inject.New(ic, d.injectDeps()); err != nil {
		return nil, err
	}
	if err := d.pipe.Open(); err != nil {
		return nil, err
	}
	d.sched = inject.NewScheduler(d.pipe, inject.SchedulerConfig{MinGap: cfg.ScheduleGap, MinEvery: cfg.ScheduleMinEvery})
	if d.obs, err = d.openObserver(); err != nil {
		return nil, err
	}
	d.notify = d.openNotifier()
	d.ready.Store(true) // after d.obs: a hook that sees ready sees the observer
	d.auth.Start(tokenRuntimes{d.reg})
	if err := d.listen(); err != nil {
		return nil, err
	}
	d.log.Info("serving", "socket", cfg.Socket, "state_dir", cfg.StateDir, "tmux_socket", d.tmuxServerName(), "version", version)
	return d, nil
}

func (d *daemon) storeOptions() store.Options {
	o := store.Options{Timeout: time.Second, CheckTimeout: d.cfg.StoreCheckTimeout,
		OnLaterError: func(op string, err error) { d.log.Error("store write failed", "op", op, "err", err) },
		OnHealth: func(err error) {
			if err != nil {
				d.log.Error("store cannot write: new triggers are refused (UNAVAILABLE) until it can; accepted ones are kept in the create log",
					"path", filepath.Join(d.cfg.StateDir, "nudge.db"), "err", err)
			} else {
				d.log.Info("store writes again: accepting triggers")
			}
		}}
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = -1 // --store-check-timeout 0: skip the check
	}
	return o
}

func (d *daemon) registryConfig() panes.Config {
	c := d.cfg
	return panes.Config{
		Tmux: c.Tmux, SocketName: c.TmuxSocket, SocketPath: c.TmuxPath, ConfigFile: c.TmuxConfig,
		SSHHost: c.SSHHost, SSH: c.SSH, SSHConfig: c.SSHConfig, Roots: c.Roots, Profiles: d.profiles,
		SweepInterval: c.Sweep, CrashLoopFailures: c.CrashLoop, CrashLoopWindow: c.CrashWindow,
		StartTimeout: c.StartTimeout,
		Env:          d.runtimeEnv, Logger: d.log, LaunchPolicy: d.auth.Policy().LaunchPolicy,
		OnOutput: d.onOutput, OnEvent: d.onEvent, OnChange: d.onRuntimeChange,
	}
}

func (d *daemon) chainConfig() ack.ChainConfig {
	c := d.cfg
	return ack.ChainConfig{
		ResumeAttempts: c.ResumeAttempts, StaleAfter: c.StaleAfter,
		CrashLoopFailures: c.CrashLoop, CrashLoopWindow: c.CrashWindow,
		LaunchGrace: c.LaunchGrace, Logger: d.log,
		OnStep: d.onFallbackStep,
	}
}

func (d *daemon) injectConfig() inject.Config {
	c := d.cfg
	ic := inject.DefaultConfig()
	ic.MaxDefer, ic.DeferRecheck, ic.MaxHold = c.MaxDefer, c.DeferRecheck, c.MaxHold
	ic.BreakerFailures, ic.BreakerCooldown = c.BreakerFailures, c.BreakerCooldown
	if c.BreakerFailures == 0 {
		ic.BreakerFailures = -1 // off
	}
	ic.RateLimit, ic.RatePer = c.RateLimit, c.RatePer
	ic.LoopTurns, ic.LoopRepeats = c.LoopTurns, c.LoopRepeats
	ic.MaxPrompt = c.MaxPrompt
	ic.EchoTimeout, ic.SubmitQuiet, ic.SubmitTimeout = c.EchoTimeout, c.SubmitQuiet, c.SubmitTimeout
	ic.AckTimeout, ic.AckRetries, ic.Backoff = c.AckTimeout, c.AckRetries, c.Backoff
	ic.Logger = d.log
	ic.OnTyped = func(took time.Duration) {
		if d.ready.Load() {
			d.obs.ObserveTyped(took)
		}
	}
	return ic
}

func (d *daemon) injectDeps() inject.Deps {
	return inject.Deps{
		Store: d.db, Runtimes: d.reg, Conn: d.sender, Gates: d.mon,
		Acks: d.acks, Fallback: d.chain, OnChange: d.onTriggerChange,
	}
}

// sender returns a workspace's control connection as an inject.Sender.
func (d *daemon) sender(workspace string) (inject.Sender, error) {
	c, err := d.reg.Conn(workspace)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (d *daemon) tmuxServerName() string {
	if d.cfg.TmuxPath != "" {
		return d.cfg.TmuxPath
	}
	return d.cfg.TmuxSocket
}

// runtimeEnv is the environment a spawned runtime gets: where the daemon is.
func (d *daemon) runtimeEnv(rt nudge.Runtime) []string {
	return append([]string{"NUDGE_SOCKET=" + d.cfg.Socket, "NUDGE_RUNTIME_ID=" + rt.RuntimeID}, d.runtimeTokenEnv(rt)...)
}

func (d *daemon) ackSignals(runtimeID string) []string {
	rt, ok := d.reg.Get(runtimeID)
	if !ok {
		return nil
	}
	return d.profiles[rt.Agent].AckSignals
}

// onOutput fans a managed pane's output out to the pipeline (echo and submit detection)
// and the ack tracker. It runs on a control connection's read goroutine.
func (d *daemon) onOutput(runtimeID string, data []byte) {
	if !d.ready.Load() {
		return
	}
	d.pipe.Observe(runtimeID)
	d.acks.Feed(runtimeID, data)
	d.mon.Feed(runtimeID, data)
}

func (d *daemon) onEvent(workspace string, ev controlmode.Event) {
	if d.ready.Load() {
		d.mon.Event(workspace, ev)
	}
}

func (d *daemon) openMonitor() (*detector.Monitor, error) {
	packs, err := detector.LoadPacks(d.cfg.PackDir)
	if err != nil {
		return nil, err
	}
	packOverrides(d.cfg.PackDir, packs).log(d.log)
	mc := detector.DefaultMonitorConfig()
	mc.QuietWindow, mc.Packs, mc.Registry = d.cfg.QuietWindow, packs, d.reg
	mc.Tmux, mc.SocketName, mc.SocketPath = d.cfg.Tmux, d.cfg.TmuxSocket, d.cfg.TmuxPath
	mc.SSH, mc.SSHConfig = d.cfg.SSH, d.cfg.SSHConfig
	mc.BindKeys = d.cfg.BindKeys
	mc.Logger = d.log
	mc.OnChange = d.onReadiness
	mc.OnQuiet = func(id string) {
		if d.ready.Load() {
			d.pipe.Kick(id)
		}
	}
	mc.OnHumanDone = d.onHumanDone
	if mc.LLM, err = d.cfg.classifier(); err != nil {
		return nil, err
	}
	if mc.LLM != nil {
		d.log.Info("llm classifier on", "url", d.cfg.llmEndpoint(), "model", d.cfg.LLMModel, "key_set", d.cfg.llmKey != "")
	}
	// A prompt queued in the agent is acked by heartbeats only after the agent took it up.
	mc.OnDequeue = func(id string) { d.acks.Dequeued(id, time.Now()) }
	return detector.NewMonitor(mc)
}

func (d *daemon) onReadiness(runtimeID string, c detector.Classification, busy bool) {
	ws := d.eventWorkspace(runtimeID)
	d.hub.Publish(Event{Type: "readiness", Workspace: ws, Detail: mustJSON(map[string]any{
		"runtime_id": runtimeID, "readiness": c.State, "summary": c.Summary,
		"actions_needed": c.ActionsNeeded, "operator_busy": busy})})
	if d.ready.Load() {
		d.obs.Workspace(ws)
	}
	if d.ready.Load() && !busy && c.State == nudge.Ready {
		d.pipe.Kick(runtimeID)
	}
}

// onHumanDone sends the orchestrator a synchronisation trigger after a human intervened
// in a worker's pane (seed 001 §4.1).
func (d *daemon) onHumanDone(rt nudge.Runtime) {
	ws, role, ok := strings.Cut(d.cfg.Orchestrator, "/")
	if !ok || !d.ready.Load() || (rt.WorkspaceID == ws && rt.Role == role) {
		return
	}
	id := fmt.Sprintf("sync_%s_%d", strings.ReplaceAll(rt.RuntimeID, ".", "_"), time.Now().UnixMilli())
	d.pipe.SubmitAsync(inject.Request{
		TriggerID: id, Workspace: ws, Agent: role, ThreadID: "sync_" + rt.WorkspaceID,
		Prompt: fmt.Sprintf("A human intervened directly in %s (%s, pane %s). Review its pane before continuing autonomous work.",
			rt.Role, rt.WorkspaceID, rt.PaneID),
		Reason: "human_intervention", Caller: "nudge",
	}, func(_ inject.Submitted, err error) {
		if err != nil {
			d.log.Warn("sync trigger", "runtime_id", rt.RuntimeID, "err", err)
		}
	})
}

func (d *daemon) onRuntimeChange(rt nudge.Runtime, prev nudge.Status) {
	d.hub.Publish(Event{Type: "runtime", Workspace: rt.WorkspaceID, Runtime: rt})
	if d.ready.Load() {
		d.obs.Workspace(rt.WorkspaceID)
	}
	if d.ready.Load() && (prev == "" || rt.Status == nudge.StatusStarting) {
		d.mon.Refresh() // a new runtime, or a relaunch in a new pane: watch it now
	}
	if s := rt.Status; d.ready.Load() && s != prev && (s == nudge.StatusStarting || s == nudge.StatusFallbackResume) {
		d.mon.Reclassify(rt.RuntimeID) // a new program: its screen is read afresh, even if it reads as the old one's did
	}
	if d.ready.Load() && rt.Status == nudge.StatusReady {
		d.pipe.Kick(rt.RuntimeID)
	}
}

func (d *daemon) onTriggerChange(t nudge.Trigger) {
	d.hub.Publish(Event{Type: "trigger", Workspace: t.WorkspaceID, Trigger: t})
	if d.ready.Load() {
		d.obs.Trigger(t)
	}
}

func (d *daemon) onFallbackStep(step ack.Step) {
	ws := d.eventWorkspace(step.RuntimeID)
	if t, err := d.pipe.Get(step.TriggerID); err == nil {
		ws = t.WorkspaceID
	}
	d.hub.Publish(Event{Type: "fallback", Workspace: ws, Detail: mustJSON(step)})
}

// listen opens the API server on the socket (and /metrics on --metrics-addr).
func (d *daemon) listen() (err error) {
	sc := server.DefaultConfig()
	sc.Socket, sc.MetricsAddr, sc.ShutdownTimeout = d.cfg.Socket, d.cfg.MetricsAddr, d.cfg.ShutdownTimeout
	sc.Version, sc.Logger = version, d.log
	d.api, err = server.Open(sc, server.Deps{
		Auth: d.auth, Tokens: d.auth, Policy: d.auth.Policy(),
		Runtimes: d.reg, Panes: paneReader{d.reg}, Triggers: d.pipe, Acks: d.acks, Store: d.db, Schedules: d.sched,
		Events: http.HandlerFunc(d.serveScopedEvents), Metrics: d.obs,
	})
	return err
}

// Run serves until ctx ends or a server fails.
func (d *daemon) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		d.log.Info("shutting down")
		return nil
	case err := <-d.api.Err():
		return err
	}
}

// Close stops the API first (no new triggers), then the pipeline (open triggers stay in
// the store), the registry (control clients detach; the agents keep running), the store.
func (d *daemon) Close() error {
	var errs []error
	d.closeOnce.Do(func() {
		d.auth.Close()
		d.obs.Close()
		if d.notify != nil {
			d.notify.Close() // waits for commands in flight, each bounded by --notify-timeout
		}
		if d.hub != nil {
			d.hub.Close() // event streams end, so the server's shutdown need not wait for them
		}
		if d.api != nil {
			errs = append(errs, d.api.Close())
		}
		if d.sched != nil {
			errs = append(errs, d.sched.Close()) // it submits into the pipeline: first
		}
		if d.pipe != nil {
			errs = append(errs, d.pipe.Close())
		}
		if d.chain != nil {
			errs = append(errs, d.chain.Close())
		}
		if d.mon != nil {
			errs = append(errs, d.mon.Close())
		}
		if d.reg != nil {
			errs = append(errs, d.reg.Close())
		}
		if d.db != nil {
			// Every open trigger is in the store, and no write-behind write was left
			// behind by a failing disk (its creates are replayed from the create log, but a
			// later state, e.g. typed, would be lost: the next start must look in the pane).
			if d.pipe != nil && errors.Join(errs...) == nil && d.db.Unavailable() == nil {
				errs = append(errs, d.db.PutMeta(cleanShutdownKey, []byte(time.Now().UTC().Format(time.RFC3339))))
			}
			errs = append(errs, d.db.Close())
		}
	})
	return errors.Join(errs...)
}

// cleanShutdownKey marks, in the store, that the daemon that used it last shut down
// cleanly (its pipeline closed and its writes flushed). It is removed at every start.
const cleanShutdownKey = "nudge.clean_shutdown"

// cleanStart reports whether the previous daemon shut down cleanly (or there was none:
// the store holds no trigger), and clears the mark.
func (d *daemon) cleanStart() bool {
	if ts, err := d.db.ListTriggers(store.TriggerFilter{Limit: 1}); err == nil && len(ts) == 0 {
		return true
	}
	v, err := d.db.GetMeta(cleanShutdownKey)
	if err != nil || len(v) == 0 {
		return false
	}
	if err := d.db.DeleteMeta(cleanShutdownKey); err != nil {
		d.log.Warn("clear clean-shutdown mark", "err", err)
		return false
	}
	return true
}
