package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/ack"
	"github.com/nudgehq/nudge/cmd/nudge/agentchannel"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/approvals"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/cmd/nudge/demoagent"
	"github.com/nudgehq/nudge/cmd/nudge/dialogs"
	"github.com/nudgehq/nudge/cmd/nudge/doctor"
	eventstream "github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/cmd/nudge/hub"
	"github.com/nudgehq/nudge/cmd/nudge/notify"
	"github.com/nudgehq/nudge/cmd/nudge/observe"
	"github.com/nudgehq/nudge/cmd/nudge/paths"
	"github.com/nudgehq/nudge/cmd/nudge/permhook"
	"github.com/nudgehq/nudge/cmd/nudge/profiling"
	"github.com/nudgehq/nudge/cmd/nudge/retention"
	"github.com/nudgehq/nudge/cmd/nudge/server"
	"github.com/nudgehq/nudge/cmd/nudge/statusfiles"
	"github.com/nudgehq/nudge/cmd/nudge/wake"
	"github.com/nudgehq/nudge/cmd/nudge/web"
	"github.com/nudgehq/nudge/detector"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/panes"
	"github.com/nudgehq/nudge/store"
)

// daemon is a running `nudge serve`: each room of the root package's map, opened in
// dependency order by Open and closed in reverse by Close. Between them, Run
// waits. The daemon holds the rooms and the bus they tell each other's news on: each
// room publishes what it owns and subscribes in its own Open (the event stream's feed,
// feed.go, is the daemon's own subscriber).
type Daemon struct {
	cfg     Config
	log     hclog.Logger
	started time.Time
	tmux    *api.Tmux // the tmux version and what is degraded on it (doctor.CheckTmux)

	bus      *nudge.Bus    // the rooms' news (nudge.Publish, nudge.Subscribe) and pane output
	feed     *nudge.Client // the event stream's subscription (feed.go)
	db       *store.DB
	hub      *eventstream.Hub
	auth     *auth.Authority
	profiles map[string]panes.Profile
	chanDir  string              // the agents' channel sockets (agentchannel.Dir; "" = off)
	acks     *ack.Tracker        // ack signals, and the agents' own records where their profiles name one
	dlg      *dialogs.Answerer   // answers agents' dialogs (API, CLI, MCP, workspace policy)
	appr     *approvals.Follower // the approvals agents state over their channels, answered there
	perms    *permhook.Keeper    // the permissions Claude Code's hook hands to nudge, answered there
	reg      *panes.Registry
	chain    *ack.Chain
	mon      *detector.Monitor
	pipe     *inject.Pipeline
	sched    *inject.Scheduler
	wake     *wake.Waker // wake policies: quiet, unread, dormant
	obs      *observe.Observer
	notify   *notify.Notifier    // tmux messages and --notify-command
	status   *statusfiles.Writer // the status files other tools read (seed 002); nil with --status-files=false
	api      *server.Server
	web      *web.Server // nil unless serve --web
	fleet    *hub.Fleet  // nil unless serve --hub or --hub-listen

	closeOnce sync.Once
}

// Open opens everything in dependency order; on error it closes what it opened.
func Open(ctx context.Context, cfg Config, logOut io.Writer) (_ *Daemon, err error) {
	d := &Daemon{cfg: cfg, log: newLogger(cfg, logOut), started: time.Now(), bus: nudge.NewBus()}
	defer func() {
		// d, not the result: an early `return nil, err` must still close what was opened.
		if err != nil {
			d.Close()
		}
	}()
	if d.db, err = openStore(cfg, d.bus, d.log); err != nil {
		return nil, err
	}
	ec := cfg.Events
	ec.Logger = d.log.Named("events")
	if d.hub, err = eventstream.Open(ec, d.db.Events()); err != nil {
		return nil, err
	}
	d.feed = openFeed(d) // before the registry: the stream has every change from the start
	if d.auth, err = openAuthority(cfg, d.db); err != nil {
		return nil, err
	}
	if d.profiles, err = panes.LoadProfiles(cfg.ProfileDir); err != nil {
		return nil, err
	}
	doctor.ProfileOverrides(cfg.ProfileDir, d.profiles).Log(d.log)
	if d.chanDir, err = agentchannel.Dir(cfg.StateDir); err != nil {
		d.log.Warn("agents' channel sockets are off: prompts to Claude Code are typed", "error", err)
		err = nil
	}
	if d.tmux, err = doctor.CheckTmux(ctx, cfg.Panes, d.log); err != nil {
		return nil, err
	}
	if d.reg, err = panes.Open(ctx, registryConfig(cfg, d), d.db); err != nil {
		return nil, fmt.Errorf("open registry: %w", err)
	}
	d.acks = ack.NewTracker(ack.TrackerConfig{Bus: d.bus, Runtimes: d.reg, Profiles: d.profiles, Logger: d.log.Named("record")})
	d.acks.Open() // the records of the agents running already, and those that start
	chain := cfg.Chain
	chain.CrashLoopFailures, chain.CrashLoopWindow = cfg.Panes.CrashLoopFailures, cfg.Panes.CrashLoopWindow
	chain.Logger, chain.Bus = d.log, d.bus
	d.chain = ack.NewChain(chain, d.reg, d.db.AuditLog())
	if d.mon, err = openMonitor(cfg, d); err != nil {
		return nil, err
	}
	if d.pipe, err = openPipeline(cfg, d); err != nil {
		return nil, err
	}
	d.appr = approvals.Open(approvals.Config{Profiles: d.profiles, Codex: d.channels().Codex, Runtimes: d.reg, Bus: d.bus, Logger: d.log.Named("approvals"),
		Audit: func(r nudge.AuditRecord) {
			if _, err := d.db.AuditLog().AppendAudit(r); err != nil {
				d.log.Error("audit", "event", r.Event, "err", err)
			}
		}})
	d.perms = permhook.Open(permhook.Config{Bus: d.bus, Logger: d.log.Named("permhook"), Audit: func(r nudge.AuditRecord) {
		if _, err := d.db.AuditLog().AppendAudit(r); err != nil {
			d.log.Error("audit", "event", r.Event, "err", err)
		}
	}})
	d.dlg = openDialogs(d)
	d.sched = inject.NewScheduler(d.pipe, cfg.Schedule)
	d.wake = openWake(cfg, d)
	if d.obs, err = openObserver(d); err != nil {
		return nil, err
	}
	nc := cfg.Notify
	nc.Session, nc.Logger = d.reg.SessionOf, d.log.Named("notify")
	var pushTo atomic.Pointer[web.Server] // the web view, once open: its Web Push
	nc.Push = func(ws, msg string) {
		if w := pushTo.Load(); w != nil {
			w.Notify(ws, msg)
		}
	}
	d.notify = notify.New(nc, d.hub, d.reg) // fed by the hub, shown through the registry's connections
	d.status = openStatusFiles(cfg, d)
	d.auth.Start(tokenRuntimes{d.reg})
	if d.web, err = openWeb(cfg, d); err != nil {
		return nil, err
	}
	pushTo.Store(d.web)
	if d.fleet, err = hub.Open(ctx, cfg.Hub, hub.Deps{Local: d.pipe, Runtimes: d.reg, Triggers: d.db.Triggers(), Audit: d.db.AuditLog(), Events: d.hub, Dialogs: d.dlg, Manage: d.reg, Kick: d.pipe.Kick, Spawn: d.spawnFor, StateDir: cfg.StateDir, Logger: d.log.Named("hub")}); err != nil {
		return nil, err
	}
	if d.api, err = openServer(cfg, d); err != nil {
		return nil, err
	}
	d.log.Info("serving", "socket", cfg.Socket, "state_dir", cfg.StateDir, "tmux_socket", tmuxServerName(cfg.Panes), "version", cfg.Version)
	return d, nil
}

// openStatusFiles is the status files room (seed 002's status store): fed by the hub's
// runtime, readiness and trigger events and by the monitor's captures (on the bus).
func openStatusFiles(cfg Config, d *Daemon) *statusfiles.Writer {
	if !cfg.StatusFiles.On {
		return nil
	}
	sc := cfg.StatusFiles.Config
	sc.StateDir, sc.Runtimes, sc.Logger, sc.Bus = cfg.StateDir, d.reg.List, d.log.Named("statusfiles"), d.bus
	w, err := statusfiles.Open(sc, d.hub)
	if err != nil {
		// A status directory that is not ours (a symlink, another owner) is never written
		// through; the daemon runs without the files rather than not at all.
		d.log.Error("status files off: their directory cannot be used", "dir", statusfiles.Dir(cfg.StateDir), "err", err)
		return nil
	}
	return w
}

// openWake is the wake room: prompts to agents nobody prompted (quiet, unread, dormant),
// submitted into the pipeline like any trigger, each sent or skipped one audited.
func openWake(cfg Config, d *Daemon) *wake.Waker {
	wc := cfg.Wake
	wc.Logger = d.log.Named("wake")
	return wake.New(wc, wake.Deps{Runtimes: d.reg, Screens: d.mon, Triggers: d.pipe,
		Audit: func(r nudge.AuditRecord) {
			if _, err := d.db.AuditLog().AppendAudit(r); err != nil {
				d.log.Error("audit", "event", r.Event, "err", err)
			}
		}})
}

// spawnFor spawns for another fleet member in a workspace this host holds: this host's
// policy judges the request as the member's caller's, on top of the token the member
// checked; the registry audits the spawn.
func (d *Daemon) spawnFor(ctx context.Context, from string, req panes.SpawnRequest) (nudge.Runtime, error) {
	sp := auth.Spawn{Workspace: req.Workspace, Agent: req.Agent, Dir: req.Dir, Argv: req.Argv, PromptFile: req.PromptFile}
	if err := d.auth.Policy().CheckSpawn(auth.Caller{Subject: "hub:" + from, UID: -1}, &sp); err != nil {
		return nudge.Runtime{}, err
	}
	req.Dir, req.PromptFile, req.Host = sp.Dir, sp.PromptFile, ""
	return d.reg.Spawn(ctx, req)
}

// channels is the agents' own channels (prompts, and Codex's app-server for approvals).
func (d *Daemon) channels() *agentchannel.Channels {
	return &agentchannel.Channels{Profiles: d.profiles, Dir: d.chanDir}
}

// openDialogs is the dialogs room: agents' approval dialogs read from the monitor's
// screens and answered through the workspace's connection, each answer audited.
func openDialogs(d *Daemon) *dialogs.Answerer {
	return dialogs.New(dialogs.Config{Screen: d.mon.DialogNow, Busy: d.mon.Collision,
		Conn: func(ws string) (dialogs.Doer, error) { return d.reg.Conn(ws) }, Runtimes: d.reg, Rule: d.auth.Policy().AutoAnswer,
		Channel: d.answerOverChannel,
		Bus:     d.bus,
		Audit: func(r nudge.AuditRecord) {
			if _, err := d.db.AuditLog().AppendAudit(r); err != nil {
				d.log.Error("audit", "event", r.Event, "err", err)
			}
		}})
}

// answerOverChannel answers a dialog over the agent's own channel: Codex's app-server,
// else Claude Code's permission hook; "" when neither holds its request (keys then).
func (d *Daemon) answerOverChannel(ctx context.Context, rt nudge.Runtime, dg nudge.Dialog, opt nudge.DialogOption, reason string) (string, error) {
	if via, err := d.appr.Answer(ctx, rt, dg, opt, reason); via != "" || err != nil {
		return via, err
	}
	return d.perms.Answer(ctx, rt, dg, opt, reason)
}

// Rooms are a running daemon's rooms, for a program that embeds it (the end-to-end
// suite, benchmarks) to look into; the daemon owns them and closes them in Close.
type Rooms struct {
	Bus       *nudge.Bus
	DB        *store.DB
	Events    *eventstream.Hub
	Auth      *auth.Authority
	Profiles  map[string]panes.Profile
	Acks      *ack.Tracker
	Registry  *panes.Registry
	Pipeline  *inject.Pipeline
	Wake      *wake.Waker
	Observer  *observe.Observer
	Status    *statusfiles.Writer // nil with --status-files=false
	Fleet     *hub.Fleet          // nil unless the daemon joins or runs a hub
	Approvals *approvals.Follower
	Perms     *permhook.Keeper
}

// Rooms returns the daemon's rooms.
func (d *Daemon) Rooms() Rooms {
	return Rooms{Bus: d.bus, DB: d.db, Events: d.hub, Auth: d.auth, Profiles: d.profiles, Acks: d.acks,
		Registry: d.reg, Pipeline: d.pipe, Wake: d.wake, Observer: d.obs, Status: d.status, Fleet: d.fleet, Approvals: d.appr, Perms: d.perms}
}

// Run serves until ctx ends or the API server fails.
func (d *Daemon) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		d.log.Info("shutting down")
		return nil
	case err := <-d.api.Err():
		return err
	case err := <-d.webErr():
		return fmt.Errorf("web view: %w", err)
	}
}

// webErr is the web view's listener failure; nil (never ready) when it is off.
func (d *Daemon) webErr() <-chan error {
	if d.web == nil {
		return nil
	}
	return d.web.Err()
}

// Close stops the rooms in reverse order of their dependencies: the token renewal and the
// observer, the event streams and the API (no new triggers), the scheduler and the
// pipeline (open triggers stay in the store), the fallback chain, the monitor, the
// registry (control clients detach; the agents keep running), the store. Each one's Close
// joins its goroutines. Idempotent.
func (d *Daemon) Close() error {
	var errs []error
	d.closeOnce.Do(func() {
		d.auth.Close()
		d.obs.Close()
		if d.notify != nil {
			d.notify.Close() // kills the commands still running (their process groups) and waits
		}
		if d.hub != nil {
			d.hub.Close() // event streams end, so the server's shutdown need not wait for them
		}
		closeIf := func(open bool, c func() error) {
			if open {
				errs = append(errs, c())
			}
		}
		d.perms.Close()                                              // the hooks it holds end: the requests in flight
		closeIf(d.web != nil, func() error { return d.web.Close() }) // its streams end first
		closeIf(d.api != nil, func() error { return d.api.Close() })
		closeIf(d.fleet != nil, d.fleet.Close)                           // no more triggers from the hub
		closeIf(d.sched != nil, func() error { return d.sched.Close() }) // it submits into the pipeline: first
		if d.wake != nil {
			d.wake.Close() // so does it
		}
		// The dialogs answer into tmux and the agents' channels: they stop first.
		d.dlg.Close()
		d.appr.Close()
		closeIf(d.pipe != nil, func() error { return d.pipe.Close() })
		closeIf(d.chain != nil, func() error { return d.chain.Close() })
		closeIf(d.mon != nil, func() error { return d.mon.Close() })
		if d.acks != nil {
			d.acks.Close() // its record readers publish replies into the pipeline's queue: closed
		}
		closeIf(d.reg != nil, func() error { return d.reg.Close() })
		if d.status != nil {
			d.status.Close() // after the registry: its last changes are written
		}
		if d.feed != nil {
			d.feed.Close() // the registry's last changes go on the stream before the hub stops
		}
		d.bus.Close() // every subscriber left has drained; nothing publishes any more
		if d.db != nil {
			// Every open trigger is in the store, and no write-behind write was left
			// behind by a failing disk (its creates are replayed from the create log, but a
			// later state, e.g. typed, would be lost: the next start must look in the pane).
			if d.pipe != nil && errors.Join(errs...) == nil && d.db.Unavailable() == nil {
				errs = append(errs, d.db.Meta().PutMeta(cleanShutdownKey, []byte(time.Now().UTC().Format(time.RFC3339))))
			}
			errs = append(errs, d.db.Close())
		}
	})
	return errors.Join(errs...)
}

// storePath is the bbolt file in the state dir.
func storePath(cfg Config) string { return paths.StoreFile(cfg.StateDir) }

// openStore opens the bbolt store in the state dir. What it reports on the bus is logged
// (its retention passes too), and its writer gone idle returns the idle heap to the OS.
func openStore(cfg Config, bus *nudge.Bus, log hclog.Logger) (*store.DB, error) {
	path := storePath(cfg)
	c := nudge.NewClient(bus, "store", 64) // closed with the bus, after the store's Close
	nudge.Subscribe(c, func(f store.LaterFailed) { log.Error("store write failed", "op", f.Op, "err", f.Err) })
	nudge.Subscribe(c, func(h store.HealthChanged) {
		if h.Err != nil {
			log.Error("store cannot write: new triggers are refused (UNAVAILABLE) until it can; accepted ones are kept in the create log",
				"path", path, "err", h.Err)
		} else {
			log.Info("store writes again: accepting triggers")
		}
	})
	nudge.Subscribe(c, func(store.Idle) { profiling.ReleaseIdleHeap() })
	o := store.Options{Timeout: time.Second, CheckTimeout: cfg.StoreCheckTimeout, Bus: bus}
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = -1 // --store-check-timeout 0: skip the check
	}
	keep := cfg.Keep.Options(&o, path, log)
	nudge.Subscribe(c, keep.Pass)
	before := retention.FileSize(path)
	db, err := store.Open(path, o)
	if err == nil {
		keep.Opened(before)
	}
	if errors.Is(err, store.ErrLocked) {
		return nil, fmt.Errorf("another nudge daemon is using %s (stop it first, or give this one another --state-dir)", cfg.StateDir)
	}
	return db, err
}

func registryConfig(cfg Config, d *Daemon) panes.Config {
	c := cfg.Panes
	c.Profiles, c.Env, c.Logger, c.LaunchPolicy = d.profiles, d.runtimeEnv, d.log, d.auth.Policy().LaunchPolicy
	c.ChannelDir, c.Bus = d.chanDir, d.bus
	if c.Self == "" {
		c.Self = demoagent.Self()
	}
	c.CheckPrompt = func(prompt string) error {
		_, err := inject.Sanitize(prompt, cfg.Inject.MaxPrompt)
		return err
	}
	return c
}

// runtimeEnv is the environment a spawned runtime gets: where the daemon is, and a token
// for itself only.
func (d *Daemon) runtimeEnv(rt nudge.Runtime) []string {
	env := []string{"NUDGE_SOCKET=" + d.cfg.Socket, "NUDGE_RUNTIME_ID=" + rt.RuntimeID}
	tok, err := d.auth.MintRuntime(rt.RuntimeID, rt.WorkspaceID)
	if err != nil {
		d.log.Error("mint runtime token", "runtime_id", rt.RuntimeID, "err", err)
		return env
	}
	return append(env, "NUDGE_RUNTIME_TOKEN="+tok)
}

func openMonitor(cfg Config, d *Daemon) (*detector.Monitor, error) {
	packs, err := detector.LoadPacks(cfg.PackDir)
	if err != nil {
		return nil, err
	}
	doctor.PackOverrides(cfg.PackDir, packs).Log(d.log)
	for _, name := range doctor.MissingPacks(d.profiles, packs) {
		d.log.Warn("profile has no readiness pack: its screen is never classified", "profile", name, "pack", d.profiles[name].Pack)
	}
	mc := cfg.Monitor
	mc.Packs, mc.Registry, mc.Logger = packs, d.reg, d.log
	p := cfg.Panes
	mc.Tmux, mc.SocketName, mc.SocketPath, mc.SSH, mc.SSHConfig = p.Tmux, p.SocketName, p.SocketPath, p.SSH, p.SSHConfig
	mc.Bus = d.bus
	if mc.LLM, err = cfg.LLM.New(); err != nil {
		return nil, err
	}
	if mc.LLM != nil {
		d.log.Info("llm classifier on", "url", cfg.LLM.Endpoint(), "model", cfg.LLM.Model, "key_set", cfg.LLM.KeySet())
	}
	return detector.NewMonitor(mc)
}

func openPipeline(cfg Config, d *Daemon) (*inject.Pipeline, error) {
	ic := cfg.Inject
	if ic.BreakerFailures == 0 {
		ic.BreakerFailures = -1 // --breaker-failures 0: no breaker
	}
	if cleanStart(d.db, d.log) {
		// The last daemon stopped cleanly: nothing can have been typed and not recorded, so
		// new triggers skip looking for their envelope in the pane first.
		ic.RedeliveryCheck = -1
	}
	ic.Logger, ic.Orchestrator = d.log, cfg.Orchestrator
	conn := func(workspace string) (inject.Sender, error) { // the workspace's control connection
		c, err := d.reg.Conn(workspace)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	p, err := inject.New(ic, inject.Deps{
		Store: d.db, Runtimes: d.reg, Conn: conn, Gates: d.mon,
		Acks: d.acks, Fallback: d.chain, Bus: d.bus, Channel: d.channels(),
	})
	if err != nil {
		return nil, err
	}
	return p, p.Open()
}

// openServer opens the API server on the socket (and /metrics on --metrics-addr).
func openServer(cfg Config, d *Daemon) (*server.Server, error) {
	sc := cfg.Server
	sc.Socket, sc.Version, sc.Logger, sc.Paths, sc.Tmux = cfg.Socket, cfg.Version, d.log, daemonPaths(cfg), d.tmux
	sc.RecordsUnread = d.acks.Degraded
	return server.Open(sc, serverDeps(d))
}

// serverDeps is what the API's handlers consume, on the socket and behind the web view.
func serverDeps(d *Daemon) server.Deps {
	deps := server.Deps{
		Auth: d.auth, Tokens: d.auth, Policy: d.auth.Policy(),
		Runtimes: d.reg, Panes: d.reg, Triggers: d.pipe, Acks: d.acks, Schedules: d.sched,
		Store: struct { // Flush, and what the API reads and audits into
			*store.DB
			*store.Triggers
			*store.AuditLog
			*store.Schedules
			*store.Runtimes
		}{d.db, d.db.Triggers(), d.db.AuditLog(), d.db.Schedules(), d.db.Runtimes()},
		Events: d.hub, Metrics: d.obs,
		Dialogs: d.dlg, Heads: d.wake, Perms: d.perms,
	}
	if d.web != nil {
		deps.Web = d.web
	}
	d.fleet.Wrap(&deps) // the fleet's runtimes and routed triggers (no-op without a hub)
	return deps
}

// daemonPaths are the paths /v1/health reports (doctor checks them), made absolute:
// doctor runs in another directory.
func daemonPaths(cfg Config) api.Paths {
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil && p != "" {
			return a
		}
		return p
	}
	return api.Paths{StateDir: abs(cfg.StateDir), Socket: abs(cfg.Socket), Store: abs(storePath(cfg)),
		ProfileDir: abs(cfg.ProfileDir), PackDir: abs(cfg.PackDir), StoreWarnSize: cfg.Keep.WarnSize}
}

func tmuxServerName(p panes.Config) string {
	if p.SocketPath != "" {
		return p.SocketPath
	}
	return p.SocketName
}

// cleanShutdownKey marks, in the store, that the daemon that used it last shut down
// cleanly (its pipeline closed and its writes flushed). It is removed at every start.
const cleanShutdownKey = "nudge.clean_shutdown"

// cleanStart reports whether the previous daemon shut down cleanly (or there was none:
// the store never held a trigger; one whose triggers all aged out did), and clears the
// mark.
func cleanStart(db *store.DB, log hclog.Logger) bool {
	if n, err := db.Triggers().TriggersCreated(); err == nil && n == 0 {
		return true
	}
	v, err := db.Meta().GetMeta(cleanShutdownKey)
	if err != nil || len(v) == 0 {
		return false
	}
	if err := db.Meta().DeleteMeta(cleanShutdownKey); err != nil {
		log.Warn("clear clean-shutdown mark", "err", err)
		return false
	}
	return true
}
