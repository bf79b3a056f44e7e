package panes

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/store"
)

// Config configures a Registry. The zero value of each field is documented on it;
// DefaultConfig fills the seed defaults.
type Config struct {
	// Tmux is the tmux binary; "" means "tmux".
	Tmux string
	// SocketName is tmux -L NAME; "" means "nudge" unless SocketPath is set.
	SocketName string
	// SocketPath is tmux -S PATH; it wins over SocketName.
	SocketPath string
	// ConfigFile is tmux -f FILE, read when a spawn starts the server; "" leaves tmux's
	// default (~/.tmux.conf). Tests use /dev/null.
	ConfigFile string
	// SSHHost is the host of a workspace created without one (ssh -T); "" means local.
	// A workspace's own host (Runtime.Host, set when it is first spawned or registered)
	// wins.
	SSHHost string
	// SSH is the ssh binary; "" means "ssh".
	SSH string
	// SSHConfig, if set, is passed to ssh as -F FILE; "" means the user's own config.
	SSHConfig string
	// Roots are the workspace root directories a spawn --dir must lie under (symlinks
	// resolved). nil means no directory is allowed (a spawn without Dir still works).
	Roots []string
	// Profiles by name; nil means LoadProfiles("").
	Profiles map[string]Profile
	// Self is the nudge executable a launch whose program is the word "nudge" runs (the
	// demo profile's `nudge demo-agent`), so that the demo runs the daemon's own binary
	// whether or not it is on PATH; "" means the "nudge" found on PATH.
	Self string
	// ChannelDir is the directory (0700, the daemon's own) where an agent whose profile
	// has a ChannelFlag opens its channel socket (ChannelSocket); "" = no such channel.
	ChannelDir string
	// SweepInterval is the reconciliation sweep period; 0 means 5s.
	SweepInterval time.Duration
	// CrashLoopFailures deaths within CrashLoopWindow mark a runtime failed; 0 means 3
	// and 15m.
	CrashLoopFailures int
	CrashLoopWindow   time.Duration
	// RestartDelay is the wait before restarting a dead runtime; 0 means 1s. Each further
	// crash of one recovery doubles it, up to RestartMaxDelay (0 means 5m).
	RestartDelay    time.Duration
	RestartMaxDelay time.Duration
	// RecoveryDeadline ends a recovery that goes on this long (crashes, each within the
	// deadline of the one before) in failed (seed 003); 0 means 5h.
	RecoveryDeadline time.Duration
	// StopTimeout is how long Stop sends C-c (every 2s) before it signals the pane's
	// processes; 0 means 5s.
	StopTimeout time.Duration
	// KillGrace is the wait after each signal (SIGHUP, SIGTERM, SIGKILL) that ends a
	// pane's program on a stop or a relaunch for all its processes to be gone (end.go);
	// 0 means 3s.
	KillGrace time.Duration
	// CommandTimeout bounds one tmux command run as a subprocess (and those of a stop
	// or a relaunch over the control connection): a tmux that stops answering fails it;
	// 0 means 20s.
	CommandTimeout time.Duration
	// ClosedGrace: a managed runtime whose window is closed (by hand: its pane is gone)
	// is recreated, but if its window is closed again within ClosedGrace of the first
	// time it is dropped (deregistered), not recreated again. 0 means 10m; <0 recreates
	// it every time.
	ClosedGrace time.Duration
	// Retention: a runtime offline, failed or exited this long, and not being restarted,
	// is collected (deregistered; its record stays in the store). 0 means 24h; <0 keeps
	// every runtime until deregistered by hand.
	Retention time.Duration
	// StartTimeout bounds starting → ready for a profile that sets none; past it the
	// runtime is failed with its screen as evidence. 0 means 2m.
	StartTimeout time.Duration
	// LaunchPolicy returns a workspace's policy launchers (absolute paths among them are
	// allowed even inside workspace directories) and directories (programs inside are
	// refused); nil means none. See ResolveLauncher.
	LaunchPolicy func(workspace string) (launchers, dirs []string)
	// Env returns extra KEY=VALUE pairs for a spawned pane; nil means none.
	Env func(rt nudge.Runtime) []string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger; nil means a null logger.
	Logger hclog.Logger

	// Bus carries what the registry reports: a managed pane's decoded output, directly
	// on the connection's read goroutine (nudge.Bus.Output: the hot path), and as events
	// nudge.RuntimeChanged (after every persisted change), nudge.PaneEvent (a pane's mode,
	// flow control, the layout) and nudge.FirstPrompt (a spawn's first prompt, once its
	// runtime is recorded, to be delivered as a trigger once the agent is ready: no prompt
	// ever goes on a command line). nil: nothing is reported, and a spawn with a first
	// prompt is refused.
	Bus *nudge.Bus
	// CheckPrompt, if set, is asked about a spawn's first prompt before anything is
	// created: an error (the trigger pipeline's own refusal, PAYLOAD_REJECTED) refuses the
	// spawn, so a prompt the pipeline would drop is never accepted silently.
	CheckPrompt func(prompt string) error
}

// DefaultConfig returns the seed defaults: server "nudge", sweep 5s, crash loop 3 in 15m,
// restart delay 1s, stop timeout 5s, kill grace 3s, tmux command timeout 20s, the
// embedded profiles.
func DefaultConfig() Config {
	c := Config{}
	c.setDefaults()
	return c
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Tmux == "" {
		c.Tmux = "tmux"
	}
	if c.SSH == "" {
		c.SSH = "ssh"
	}
	if c.SocketName == "" && c.SocketPath == "" {
		c.SocketName = "nudge"
	}
	if c.CrashLoopFailures == 0 {
		c.CrashLoopFailures = 3
	}
	def(&c.SweepInterval, 5*time.Second)
	def(&c.CrashLoopWindow, 15*time.Minute)
	def(&c.RestartDelay, time.Second)
	def(&c.RestartMaxDelay, 5*time.Minute)
	def(&c.RecoveryDeadline, 5*time.Hour)
	def(&c.StopTimeout, 5*time.Second)
	def(&c.KillGrace, 3*time.Second)
	def(&c.CommandTimeout, 20*time.Second)
	def(&c.StartTimeout, 2*time.Minute)
	def(&c.ClosedGrace, 10*time.Minute)
	def(&c.Retention, 24*time.Hour)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
}

// Validate fills defaults, loads the default profiles if none are set, and resolves the
// roots (each must exist).
func (c *Config) Validate() error {
	c.setDefaults()
	if c.SweepInterval < 0 || c.CrashLoopWindow < 0 || c.RestartDelay < 0 || c.RestartMaxDelay < 0 || c.RecoveryDeadline < 0 || c.StopTimeout < 0 || c.KillGrace < 0 || c.CommandTimeout < 0 || c.StartTimeout < 0 || c.CrashLoopFailures < 0 {
		return errors.New("panes config: negative duration or count")
	}
	if c.Profiles == nil {
		ps, err := LoadProfiles("")
		if err != nil {
			return err
		}
		c.Profiles = ps
	}
	roots := make([]string, 0, len(c.Roots))
	for _, root := range c.Roots {
		if !filepath.IsAbs(root) {
			return fmt.Errorf("panes config: root %q is not absolute", root)
		}
		real, err := filepath.EvalSymlinks(root)
		if err != nil {
			return fmt.Errorf("panes config: root: %w", err)
		}
		roots = append(roots, real)
	}
	c.Roots = roots
	return nil
}

// Store is where the registry keeps its records (*store.DB): the runtimes, their audit
// records and what is noted about a stopped runtime, written behind; Flush waits for
// them.
type Store interface {
	Flush()
	Runtimes() *store.Runtimes
	AuditLog() *store.AuditLog
	Meta() *store.Meta
}

// Reader is the registry's read model: what a consumer that only looks at the runtimes
// takes (*Registry is one). The records it returns are copies.
type Reader interface {
	Get(id string) (nudge.Runtime, bool)
	Lookup(workspace, role string) (nudge.Runtime, bool)
	List() []nudge.Runtime
}

var _ Reader = (*Registry)(nil)

// Registry is the live registry of runtimes: the façade that wires the parts below and
// keeps the API callers use. Each part owns its own state and says so on its type:
//
//	records     the runtime records and their bookkeeping, one lock (the Registry's
//	            verbs Get, Lookup, List, Transition, Update, SetPaused, EnterRecovery,
//	            Stopped and HoldRestarts are its)
//	conns       the workspaces' control connections and the commands run over them
//	launcher    argv, launcher policy, spawn, register, restart, relaunch, fallback launches
//	ender       ending a pane's program by pid, locally and over ssh; Stop
//	reconciler  events and the sweep, exits, crash recovery, start timeouts
//	tmuxClient  tmux as a subprocess
//
// Every goroutine is in one group (a context and a WaitGroup) that Close stops and waits
// for. All methods are safe for concurrent use.
type Registry struct {
	recs   *records
	tmux   *tmuxClient
	conns  *conns
	ender  *ender
	launch *launcher
	recon  *reconciler
	g      *group

	stats Stats

	// kill sends signals to a pane's processes (end.go); nil means syscall.Kill. Tests
	// set it to one that drops SIGKILL, for a program that cannot be ended.
	kill func(pid int, sig syscall.Signal) error
}

// group is every goroutine the registry starts: one context cancelled and one WaitGroup
// waited for by close. After close it starts none.
type group struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
}

// goAll starts fs, each on a goroutine of its own, unless the group is closed: then none,
// and it returns false.
func (g *group) goAll(fs ...func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(len(fs))
	for _, f := range fs {
		go func() { defer g.wg.Done(); f() }()
	}
	return true
}

// close cancels the group's context and waits for its goroutines. Idempotent.
func (g *group) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.cancel()
	g.wg.Wait()
}

// Stats are the registry's counters.
type Stats struct {
	Restarts   atomic.Int64 // restarts started (tmux_runtime_restart_total)
	PaneDeaths atomic.Int64 // panes seen dead
	Drifts     atomic.Int64 // runtimes whose pane went missing (REGISTRY_DRIFT)
	CrashLoops atomic.Int64 // runtimes marked failed for crash-looping
	Sweeps     atomic.Int64 // reconcile passes
	Dials      atomic.Int64 // control connections established (reconnects = Dials - workspaces)
	Pauses     atomic.Int64 // %pause notifications (the server paused a pane for a slow reader)
	LagNanos   atomic.Int64 // the latest %extended-output age: how far behind the stream is
	Reaps      atomic.Int64 // reap requests: a dead pane lacked its exit status (reap.go)
}

// StatsSnapshot is a copy of Stats.
type StatsSnapshot struct {
	Restarts, PaneDeaths, Drifts, CrashLoops, Sweeps int64
	Dials, Pauses                                    int64
	Lag                                              time.Duration
	Reaps                                            int64
}

// Stats returns the counters.
func (r *Registry) Stats() StatsSnapshot {
	return StatsSnapshot{r.stats.Restarts.Load(), r.stats.PaneDeaths.Load(), r.stats.Drifts.Load(),
		r.stats.CrashLoops.Load(), r.stats.Sweeps.Load(), r.stats.Dials.Load(), r.stats.Pauses.Load(),
		time.Duration(r.stats.LagNanos.Load()), r.stats.Reaps.Load()}
}

// Open loads the runtimes from db and starts watching every workspace that has any: live
// panes are re-adopted by pane id (or target), missing ones are audited as REGISTRY_DRIFT
// and restarted per policy. The caller keeps ownership of db and closes it after Close.
func Open(ctx context.Context, cfg Config, db Store) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rts, err := db.Runtimes().ListRuntimes()
	if err != nil {
		return nil, fmt.Errorf("open registry: %w", err)
	}
	c := &cfg
	g := &group{}
	g.ctx, g.cancel = context.WithCancel(context.WithoutCancel(ctx))
	r := &Registry{recs: newRecords(c, db), tmux: &tmuxClient{cfg: c}, g: g}
	r.conns = &conns{cfg: c, stats: &r.stats, g: g, recs: r.recs, tmux: r.tmux, ws: map[string]*workspace{}}
	r.ender = &ender{cfg: c, recs: r.recs, conns: r.conns, tmux: r.tmux, kill: &r.kill}
	r.launch = &launcher{cfg: c, stats: &r.stats, recs: r.recs, conns: r.conns, tmux: r.tmux, ender: r.ender}
	r.recon = &reconciler{cfg: c, stats: &r.stats, g: g, recs: r.recs, conns: r.conns, tmux: r.tmux, launch: r.launch,
		deadSince: map[string]time.Time{}, closed: map[string]time.Time{}, strays: map[string][]Stray{}}
	r.conns.loop = r.recon.loop
	r.recs.load(rts, func(ws string) { r.conns.getLocked(ws) })
	return r, nil
}

// Get returns a runtime by id.
func (r *Registry) Get(id string) (nudge.Runtime, bool) { return r.recs.Get(id) }

// Lookup returns the runtime of a workspace's role.
func (r *Registry) Lookup(workspace, role string) (nudge.Runtime, bool) {
	return r.recs.Lookup(workspace, role)
}

// List returns every runtime, ordered by workspace then role.
func (r *Registry) List() []nudge.Runtime { return r.recs.List() }

// Transition moves a runtime to another status: validated against the state machine,
// persisted, audited (runtime_status_changed with from, to and reason), then published
// (nudge.RuntimeChanged). A transition to the current status is a no-op. An illegal one returns a CONFLICT
// *nudge.Error wrapping *TransitionError and changes nothing.
func (r *Registry) Transition(id string, to nudge.Status, reason string) (nudge.Runtime, error) {
	return r.recs.Transition(id, to, reason)
}

// Update changes a runtime's other fields (readiness, operator_busy, heartbeat, session
// id, last trigger, ...) through fn, persists the result and publishes it
// (nudge.RuntimeChanged). fn must not change RuntimeID or Status (use Transition); such an
// Update is refused.
func (r *Registry) Update(id string, fn func(*nudge.Runtime)) (nudge.Runtime, error) {
	return r.recs.Update(id, fn)
}

// SetPaused pauses or resumes triggers for a runtime (`nudge pause|resume`). The paused
// flag is the trigger gate; the status shows it: a ready runtime goes to paused at once,
// one in the middle of a trigger (or still starting) when it would next be ready, and
// resuming a paused runtime makes it ready again. Pausing twice is a no-op.
func (r *Registry) SetPaused(id string, paused bool, reason string) (nudge.Runtime, error) {
	return r.recs.SetPaused(id, paused, reason)
}

// EnterRecovery shows in the state machine that a fallback chain is recovering the
// runtime: stage is fallback_resume or spawn_recovery (seed 001 §9). RelaunchWith enters
// them by itself (its argv tells a resume from a spawn); a chain that recovers a runtime
// some other way (a launch in a window of its own) calls this, and Transition to leave
// them.
func (r *Registry) EnterRecovery(id string, stage nudge.Status, reason string) (nudge.Runtime, error) {
	return r.recs.EnterRecovery(id, stage, reason)
}

// Stopped reports whether runtime id was stopped (`nudge stop`) and not started again
// since (a restart or a new spawn clears it): it stays down, and no trigger relaunches it.
func (r *Registry) Stopped(id string) bool { return r.recs.Stopped(id) }

// HoldRestarts stops automatic restarts of a runtime (and keeps deaths out of its crash
// count) until the returned release is called: the fallback chain owns the pane meanwhile.
func (r *Registry) HoldRestarts(id string) (release func()) { return r.recs.HoldRestarts(id) }

// Close stops every goroutine the registry started (control connections, reconcilers,
// restart timers) and waits for them. It leaves every pane running. Idempotent.
func (r *Registry) Close() error {
	r.g.close()
	r.recs.db.Flush()
	return nil
}

// Conn returns the live control connection of a workspace, or a TARGET_NOT_FOUND error.
// The connection is owned by the registry; callers must not Close it.
func (r *Registry) Conn(workspace string) (*controlmode.Conn, error) {
	return r.conns.conn(workspace)
}

// HostOf returns the host a workspace is bound to ("" for this machine): that of its
// runtimes, else the daemon's default host.
func (r *Registry) HostOf(workspace string) string { return r.conns.hostOf(workspace) }

// SessionOf returns the tmux session a workspace is bound to: that of its runtimes (a
// user's own session for one bound there by a register), else agents_<ws>.
func (r *Registry) SessionOf(workspace string) string { return r.conns.placeOf(workspace).session }

// SpawnAside starts a managed runtime beside from, for a fallback that must not end
// from's process (a human is at its pane, nudge does not manage it, or it is the user's
// own). It runs from's profile's launch command (resume: its ResumeLiveArgv for from's
// session) in a new window of from's workspace, as role ROLE-fb-SUFFIX: a runtime like
// any other, listed, stoppable and reconciled, so no fallback window is ever left
// unmanaged. No prompt goes on its command line: the caller delivers it live to the new
// runtime once it is ready, never to from's pane.
func (r *Registry) SpawnAside(ctx context.Context, from nudge.Runtime, resume bool) (nudge.Runtime, error) {
	return r.launch.spawnAside(ctx, from, resume)
}

// RelaunchWith runs argv once in the runtime's place (a new pane in the old one's slot;
// whatever ran there is ended first, by pid, so a live agent no longer holds its
// session). The runtime's own argv is unchanged: an automatic restart later runs that
// again. It returns the new pane id and how the old program ended ("" when none ran).
func (r *Registry) RelaunchWith(ctx context.Context, id string, argv []string, reason string) (paneID, ended string, err error) {
	return r.launch.relaunchWith(ctx, id, argv, reason)
}

// LaunchWindow runs argv in a new detached window named name in the workspace's session,
// with remain-on-exit so its exit status can be read. It is not a managed runtime. It
// returns the new pane's id.
func (r *Registry) LaunchWindow(ctx context.Context, workspace, name string, argv []string) (string, error) {
	return r.launch.launchWindow(ctx, workspace, name, argv)
}

// PaneExit reports whether the pane's process is running, or its exit status (128+signal
// for a signal). A pane that no longer exists counts as exited with unknown status. A dead
// pane whose status tmux lost (reap.go) is reaped and read again, for up to a second.
func (r *Registry) PaneExit(ctx context.Context, workspace, paneID string) (bool, *int, error) {
	return r.conns.paneExitWait(ctx, workspace, paneID)
}

// Register adopts an existing live pane of the workspace's session. A managed pane gets
// remain-on-exit so its death is observed. Bad input changes nothing.
func (r *Registry) Register(ctx context.Context, req RegisterRequest) (nudge.Runtime, error) {
	return r.launch.register(ctx, req)
}

// SetSessionEnv sets (or with val "" unsets) a variable in the environment of workspace
// ws's session (agents_<ws>), over its control connection: programs started in the
// session from then on see it (the runtime-token renewal uses it).
func (r *Registry) SetSessionEnv(ctx context.Context, ws, name, val string) error {
	return r.conns.setSessionEnv(ctx, ws, name, val)
}

// SetPaneOption sets (or with val "" unsets) the user option name (an "@name") of runtime
// id's pane, over its workspace's control connection. Unlike the session environment, a
// pane option reaches no program's environment: only a tmux client that asks for it sees
// it (the runtime-token renewal uses it). A runtime without a pane is not an error.
func (r *Registry) SetPaneOption(ctx context.Context, id, name, val string) error {
	return r.conns.setPaneOption(ctx, id, name, val)
}

// Spawn starts a managed runtime: it creates agents_<ws> and the role's window if
// missing, running the agent as the pane's command with remain-on-exit on, records it
// (status starting) and audits runtime_spawned. Bad input changes nothing.
func (r *Registry) Spawn(ctx context.Context, req SpawnRequest) (nudge.Runtime, error) {
	return r.launch.spawn(ctx, req)
}

// Stop ends a runtime (seed 001 §6.9): C-c (again every 2 s) for StopTimeout, then
// SIGHUP, SIGTERM and SIGKILL by pid to every process of the pane's program, each given
// KillGrace (end.go); once they are all gone the pane is killed (a pane that exited is
// removed too). The runtime goes offline and is never restarted automatically (the stop
// is persisted) until Restart or a new Spawn. The runtime_stopped audit record says
// which step ended the program. A program that outlives SIGKILL's grace fails the stop
// with STOP_FAILED: the runtime is failed, its pane kept, the pids left in the audit.
//
// A stop runs to its end once begun, even if ctx is cancelled (a caller that went away):
// every step is bounded (StopTimeout, KillGrace, CommandTimeout per tmux command).
func (r *Registry) Stop(ctx context.Context, id, reason string) error {
	return r.ender.stop(ctx, id, reason)
}

// Deregister stops tracking a runtime (its pane keeps running): status deregistered,
// persisted and audited with the reason. The role can then be spawned or registered again.
func (r *Registry) Deregister(ctx context.Context, id, reason string) error {
	return r.recs.deregister(ctx, id, reason, r.conns.screens.drop)
}

// Tail reads the last n lines of a runtime's pane over its workspace's control
// connection (joined wrapped lines, trailing blank lines dropped), cleaned for display:
// plain text (nudge.StripANSI) with its secrets masked (nudge.Redact), also a secret split
// across lines. A runtime whose pane is gone (stopped, or its pane closed) gets the last
// screen kept of it, marked Gone, instead of an error.
func (r *Registry) Tail(ctx context.Context, rt nudge.Runtime, n int) (Screen, error) {
	return r.conns.tail(ctx, rt, n)
}

// Restart runs the runtime's argv again: in a new pane in its old pane's place if that
// still exists (same window and layout slot; the old program is ended first: SIGHUP,
// SIGTERM, SIGKILL by pid, end.go), else in a new window (and session).
// It clears a Stop. The runtime goes to starting; a failure leaves it failed with
// SPAWN_FAILED.
//
// Like Stop it runs to its end once begun, even if ctx is cancelled: every step is bounded.
func (r *Registry) Restart(ctx context.Context, id, reason string) (nudge.Runtime, error) {
	r.recs.recovery.forget(id) // restarted by hand: a new start, not a recovery
	return r.launch.restart(context.WithoutCancel(ctx), id, reason, false)
}

// Unmanaged lists the panes in the workspaces' sessions that no runtime claims (windows
// opened there by hand), as the last reconcile of each workspace saw them.
func (r *Registry) Unmanaged() []Stray { return r.recon.unmanaged() }

// Profile returns a profile by name.
func (r *Registry) Profile(name string) (Profile, bool) {
	p, ok := r.recs.cfg.Profiles[name]
	return p, ok
}

// StartDeadline is when a starting runtime fails its start; zero if it is not starting.
// The trigger pipeline holds a trigger for a starting runtime until then.
func (r *Registry) StartDeadline(id string) time.Time { return r.recon.startDeadline(id) }
