package panes

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
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

	// Hooks, called on connection read goroutines or registry goroutines; they must not
	// block. nil means none.
	OnOutput func(runtimeID string, data []byte) // decoded output of a managed pane; data valid during the call
	OnEvent  func(workspace string, ev controlmode.Event)
	OnChange func(rt nudge.Runtime, prev nudge.Status) // after every persisted change
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

// Registry is the live registry of runtimes. It owns one goroutine pair per workspace
// (the control connection and its reconciler) and the restart timers; Close stops them
// all. All methods are safe for concurrent use.
type Registry struct {
	cfg Config
	db  *store.DB

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	rts     map[string]*nudge.Runtime // by runtime id; never deregistered ones
	ws      map[string]*workspace
	busy    map[string]string // runtime id -> spawning|restarting|stopping|restart-pending
	stopped map[string]bool   // stopped by Stop: never restarted automatically
	held    map[string]int    // HoldRestarts count: no automatic restart while > 0
	// deadSince: runtimes whose pane reads dead before its exit status is known.
	deadSince map[string]time.Time
	// oneOff: the pane id of a fallback resume run in the runtime's place (its end is
	// neither clean nor a crash: the runtime's own program comes back).
	oneOff map[string]string
	// resumed: the runtime's current program was started by its interactive resume after
	// a crash; if that crashes too, the next restart is fresh.
	resumed  map[string]bool
	noResume map[string]bool
	markers  markerScan    // completion markers in pane output
	screens  screenKeeper  // the last screen of panes a stop closed, for Tail
	recovery recoveryClock // the pace and deadline of automatic restarts
	closed   bool
	panes    sync.Map // pane number (int) -> runtime id, for OnOutput

	stats Stats

	// kill sends signals to a pane's processes (end.go); nil means syscall.Kill. Tests
	// set it to one that drops SIGKILL, for a program that cannot be ended.
	kill func(pid int, sig syscall.Signal) error
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
func Open(ctx context.Context, cfg Config, db *store.DB) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rts, err := db.ListRuntimes()
	if err != nil {
		return nil, fmt.Errorf("open registry: %w", err)
	}
	r := &Registry{cfg: cfg, db: db, rts: map[string]*nudge.Runtime{}, ws: map[string]*workspace{},
		busy: map[string]string{}, stopped: map[string]bool{}, held: map[string]int{},
		deadSince: map[string]time.Time{}, oneOff: map[string]string{}, resumed: map[string]bool{},
		noResume: map[string]bool{}}
	r.ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range rts {
		rt := rts[i]
		if rt.Status == nudge.StatusDeregistered {
			continue
		}
		if rt.Host == "" {
			rt.Host = r.cfg.SSHHost // a record from before hosts were per workspace
		}
		r.rts[rt.RuntimeID] = &rt
		r.indexPane(&rt)
		r.watchMarkerLocked(&rt)
		if b, err := db.GetMeta(stoppedKey(rt.RuntimeID)); err == nil && len(b) > 0 {
			r.stopped[rt.RuntimeID] = true
		}
		r.workspaceLocked(rt.WorkspaceID)
	}
	return r, nil
}

// Close stops every goroutine the registry started (control connections, reconcilers,
// restart timers) and waits for them. It leaves every pane running. Idempotent.
func (r *Registry) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	r.db.Flush()
	return nil
}

// Get returns a runtime by id.
func (r *Registry) Get(id string) (nudge.Runtime, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt, ok := r.rts[id]
	if !ok {
		return nudge.Runtime{}, false
	}
	return cloneRuntime(rt), true
}

// Lookup returns the runtime of a workspace's role.
func (r *Registry) Lookup(workspace, role string) (nudge.Runtime, bool) {
	if rt, ok := r.Get(RuntimeID(workspace, role)); ok {
		return rt, true
	}
	return r.byAgentID(workspace, role)
}

// byAgentID finds the runtime of workspace whose agent_id (seed 000 §10) is id, when it
// differs from its role; two such runtimes are ambiguous and find none.
func (r *Registry) byAgentID(workspace, id string) (nudge.Runtime, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var found *nudge.Runtime
	for _, rt := range r.rts {
		if rt.WorkspaceID == workspace && rt.AgentID == id && id != "" {
			if found != nil {
				return nudge.Runtime{}, false
			}
			found = rt
		}
	}
	if found == nil {
		return nudge.Runtime{}, false
	}
	return cloneRuntime(found), true
}

// List returns every runtime, ordered by workspace then role.
func (r *Registry) List() []nudge.Runtime {
	r.mu.Lock()
	out := make([]nudge.Runtime, 0, len(r.rts))
	for _, rt := range r.rts {
		out = append(out, cloneRuntime(rt))
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].WorkspaceID != out[j].WorkspaceID {
			return out[i].WorkspaceID < out[j].WorkspaceID
		}
		return out[i].Role < out[j].Role
	})
	return out
}

// Profile returns a profile by name.
func (r *Registry) Profile(name string) (Profile, bool) {
	p, ok := r.cfg.Profiles[name]
	return p, ok
}

// Conn returns the live control connection of a workspace, or a TARGET_NOT_FOUND error.
// The connection is owned by the registry; callers must not Close it.
func (r *Registry) Conn(workspace string) (*controlmode.Conn, error) {
	r.mu.Lock()
	w := r.ws[workspace]
	r.mu.Unlock()
	if w != nil {
		if c := w.current(); c != nil {
			return c, nil
		}
		if h := w.hostName(); h != "" {
			return nil, nudge.NewError(nudge.HostUnreachable, "no control connection for workspace "+workspace+" on host "+h)
		}
	}
	return nil, nudge.NewError(nudge.TargetNotFound, "no control connection for workspace "+workspace)
}

func notFound(id string) error {
	return nudge.NewError(nudge.NotFound, "unknown runtime "+id+" (`nudge ls` lists them; ids are rt_WORKSPACE.ROLE)")
}

// Transition moves a runtime to another status: validated against the state machine,
// persisted, audited (runtime_status_changed with from, to and reason), then OnChange. A
// transition to the current status is a no-op. An illegal one returns a CONFLICT
// *nudge.Error wrapping *TransitionError and changes nothing.
func (r *Registry) Transition(id string, to nudge.Status, reason string) (nudge.Runtime, error) {
	r.mu.Lock()
	rt, ok := r.rts[id]
	if !ok {
		r.mu.Unlock()
		return nudge.Runtime{}, notFound(id)
	}
	if rt.Status == pausedTarget(rt, to) {
		defer r.mu.Unlock()
		return cloneRuntime(rt), nil
	}
	ch, err := r.transitionLocked(id, to, reason, "", nil)
	r.mu.Unlock()
	if err != nil {
		return nudge.Runtime{}, err
	}
	r.notify(ch)
	return ch[0].rt, nil
}

// Update changes a runtime's other fields (readiness, operator_busy, heartbeat, session
// id, last trigger, ...) through fn, persists the result and calls OnChange. fn must not
// change RuntimeID or Status (use Transition); such an Update is refused.
func (r *Registry) Update(id string, fn func(*nudge.Runtime)) (nudge.Runtime, error) {
	r.mu.Lock()
	cur, ok := r.rts[id]
	if !ok {
		r.mu.Unlock()
		return nudge.Runtime{}, notFound(id)
	}
	next := cloneRuntime(cur)
	fn(&next)
	if next.RuntimeID != cur.RuntimeID || next.Status != cur.Status {
		r.mu.Unlock()
		return nudge.Runtime{}, nudge.NewError(nudge.BadRequest, "update may not change runtime_id or status")
	}
	if !Live(next.Status) {
		next.Readiness = nudge.Unknown // no stale readiness on a dead pane
	}
	if r.shownReadyLocked(cur, &next) {
		delete(r.oneOff, id) // an interactive resume (claude --resume) is the runtime's program now
		chs, err := r.transitionLocked(id, nudge.StatusReady, "agent shows READY", "",
			func(n *nudge.Runtime) { status := n.Status; *n = cloneRuntime(&next); n.Status = status })
		r.mu.Unlock()
		if err != nil {
			return nudge.Runtime{}, err
		}
		r.notify(chs)
		return chs[len(chs)-1].rt, nil
	}
	next.UpdatedAt = r.cfg.Now()
	err := r.putLocked(&next)
	r.mu.Unlock()
	if err != nil {
		return nudge.Runtime{}, err
	}
	r.notify([]change{{rt: next, prev: cur.Status}})
	return next, nil
}

// shownReadyLocked: a starting runtime whose profile waits for readiness now reads READY
// (starting → ready, seed 001 §9 "codex_detected"), or a resume run in its pane does
// (fallback_resume → ready, "resume_ok": an interactive resume such as claude --resume). Not while a spawn or restart still
// holds it: that operation records the runtime first.
func (r *Registry) shownReadyLocked(cur, next *nudge.Runtime) bool {
	status := cur.Status
	return (status == nudge.StatusStarting || status == nudge.StatusFallbackResume && r.oneOff[cur.RuntimeID] == cur.PaneID) &&
		r.busy[cur.RuntimeID] == "" &&
		next.Readiness == nudge.Ready && r.cfg.Profiles[cur.Agent].ReadyOn == ReadyOnReadiness
}
