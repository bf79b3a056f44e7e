package inject

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/panes"
	"github.com/nudgehq/nudge/store"
)

// Config is the trigger policy. Zero values are replaced by DefaultConfig's in New.
type Config struct {
	MaxDefer        time.Duration   // longest a collision deferral lasts before DEFER_TIMEOUT (60s)
	MaxHold         time.Duration   // longest a busy, confirming, unknown, paused or cooling runtime holds a trigger before DEFER_TIMEOUT (10m)
	AsideIdle       time.Duration   // how long a runtime a fallback spawned beside a kept pane stays once its prompts are done, for the next fallback to reuse, before it is stopped and deregistered (MaxDefer)
	BreakerFailures int             // consecutive failed triggers that open a runtime's breaker (3; negative: no breaker)
	BreakerCooldown time.Duration   // first cooldown of an open breaker; doubles on a failed probe, up to 16x (2m)
	DeferRecheck    time.Duration   // re-check period of a deferred trigger (5s)
	RateLimit       int             // triggers per RatePer per thread of a runtime (10)
	RuntimeRate     int             // triggers per RatePer to a runtime, over all its threads and names (0: RateLimit)
	RatePer         time.Duration   // (1m)
	LoopTurns       int             // triggers on a thread without progress before THREAD_AUTO_BLOCKED (20)
	LoopRepeats     int             // identical prompts on a thread without progress before blocking (3)
	MaxPrompt       int             // prompt bytes after sanitizing (64 KiB)
	EchoTimeout     time.Duration   // longest wait for the typed text's echo before Enter (2s)
	SubmitTimeout   time.Duration   // longest wait for output after Enter before checking the composer (3s)
	SubmitQuiet     time.Duration   // quiet after Enter before looking at the composer (250ms)
	AckTimeout      time.Duration   // per attempt (8s)
	AckRetries      int             // (2)
	Backoff         []time.Duration // before each retry (2s, 4s)
	RedeliveryCheck time.Duration   // after Open, new ids are looked for in the pane for this long (10m)
	AckHint         bool            // ask the agent to print the ack marker in the envelope
	// Orchestrator is who gets a sync trigger after a human intervened in a worker's pane
	// (nudge.HumanDone; seed 000 §13.2): WS/ROLE, or ROLE in the worker's workspace; ""
	// means the role "orchestrator" there, if a runtime has it; "none" means no sync.
	Orchestrator string
	Now          func() time.Time
	Logger       hclog.Logger
}

// DefaultConfig returns the seed defaults.
func DefaultConfig() Config {
	return Config{
		MaxDefer: 60 * time.Second, DeferRecheck: 5 * time.Second, MaxHold: 10 * time.Minute,
		BreakerFailures: 3, BreakerCooldown: 2 * time.Minute,
		RateLimit: 10, RatePer: time.Minute, LoopTurns: 20, LoopRepeats: 3,
		MaxPrompt: 64 << 10, EchoTimeout: 2 * time.Second,
		SubmitTimeout: 3 * time.Second, SubmitQuiet: 250 * time.Millisecond,
		AckTimeout: 8 * time.Second, AckRetries: 2,
		Backoff:         []time.Duration{2 * time.Second, 4 * time.Second},
		RedeliveryCheck: 10 * time.Minute, AckHint: true,
		Now: time.Now,
	}
}

// Validate reports a policy that cannot work.
func (c *Config) Validate() error {
	switch {
	case c.MaxDefer <= 0 || c.DeferRecheck <= 0 || c.MaxHold <= 0:
		return errors.New("defer and hold windows must be positive")
	case c.BreakerCooldown <= 0:
		return errors.New("breaker cooldown must be positive")
	case c.RateLimit <= 0 || c.RuntimeRate < 0 || c.RatePer <= 0:
		return errors.New("rate limit must be positive")
	case c.AckTimeout <= 0 || c.AckRetries < 0:
		return errors.New("ack timeout must be positive and retries not negative")
	case c.MaxPrompt <= 0:
		return errors.New("max prompt must be positive")
	}
	return nil
}

func (c *Config) fill() {
	d := DefaultConfig()
	dur := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	num := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	dur(&c.MaxDefer, d.MaxDefer)
	dur(&c.MaxHold, d.MaxHold)
	dur(&c.AsideIdle, c.MaxDefer)
	dur(&c.BreakerCooldown, d.BreakerCooldown)
	num(&c.BreakerFailures, d.BreakerFailures)
	dur(&c.DeferRecheck, d.DeferRecheck)
	dur(&c.RatePer, d.RatePer)
	dur(&c.EchoTimeout, d.EchoTimeout)
	dur(&c.SubmitTimeout, d.SubmitTimeout)
	dur(&c.SubmitQuiet, d.SubmitQuiet)
	dur(&c.AckTimeout, d.AckTimeout)
	dur(&c.RedeliveryCheck, d.RedeliveryCheck)
	num(&c.RateLimit, d.RateLimit)
	num(&c.RuntimeRate, c.RateLimit)
	num(&c.LoopTurns, d.LoopTurns)
	num(&c.LoopRepeats, d.LoopRepeats)
	num(&c.MaxPrompt, d.MaxPrompt)
	if c.Backoff == nil {
		c.Backoff = d.Backoff
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
}

// Runtimes is what the pipeline needs of the registry (*panes.Registry).
type Runtimes interface {
	Get(id string) (nudge.Runtime, bool)
	Lookup(workspace, role string) (nudge.Runtime, bool)
	Update(id string, fn func(*nudge.Runtime)) (nudge.Runtime, error)
	Transition(id string, to nudge.Status, reason string) (nudge.Runtime, error)
	Profile(name string) (panes.Profile, bool)
}

// Sender runs control-mode commands (*controlmode.Conn).
type Sender interface {
	Do(ctx context.Context, cmd string) (*controlmode.Reply, error)
	DoAll(ctx context.Context, cmds ...string) ([]*controlmode.Reply, error)
}

// Gates are the live detectors' answers (package detector fills them).
type Gates interface {
	// Collision reports whether a human is at the pane (typing within the quiet window,
	// a draft in the composer, a pane in copy mode) and when that may end (zero: unknown).
	Collision(rt nudge.Runtime) (busy bool, until time.Time, why string)
	// Readiness is the agent's current readiness.
	Readiness(rt nudge.Runtime) nudge.Readiness
	// Composer captures the pane now and returns the text in the agent's composer.
	Composer(ctx context.Context, rt nudge.Runtime) (string, error)
	// Injecting tells the detector that output and input on the runtime's pane until
	// `until` are nudge's own typing, not a human's.
	Injecting(runtimeID string, until time.Time)
}

// InputLine is implemented by Gates that know an agent's input line beyond its text
// (*detector.Monitor does): a large paste the agent folds into a placeholder
// ("[Pasted Content 5621 chars]") is still nudge's prompt, waiting for Enter, and a prompt
// the agent took while busy may wait in its own queue.
type InputLine interface {
	// Typed records the text nudge just typed into the runtime's input line.
	Typed(runtimeID, text string)
	// Ours reports whether composer (as Composer returned it) holds text folded.
	Ours(rt nudge.Runtime, composer, text string) bool
	// Queued reports whether the last look at the pane showed input queued in the agent.
	Queued(rt nudge.Runtime) bool
}

// Intake is implemented by Gates that follow an agent's intake of a prompt nudge
// submitted (*detector.Monitor does). A TUI may take a prompt out of its composer and
// then draw nothing while it reads it (Gemini CLI does for seconds with a large paste),
// its screen READY all the while: a trigger typed then would wait in the agent's own
// queue behind it, not reach an idle agent. Until the agent shows it took the prompt, or
// its profile's intake window passes, the next trigger is held.
type Intake interface {
	// Submitted records that trigger triggerID's prompt has just left the runtime's
	// composer (after the composer was seen without it).
	Submitted(runtimeID, triggerID string)
	// Settled stops waiting for trigger triggerID's intake: it is closed, or the turn
	// that took it ended in the agent's record (Reply).
	Settled(runtimeID, triggerID string)
	// Intaking reports the trigger whose prompt the agent has not shown yet that it took,
	// and when the wait for it ends.
	Intaking(rt nudge.Runtime) (triggerID string, until time.Time, ok bool)
}

// Working is implemented by Gates that tell a working agent from a pane whose output
// merely flows (*detector.Monitor does): its screen shows its busy sign.
type Working interface {
	Working(rt nudge.Runtime) bool
}

// Acker waits for acknowledgements (package ack).
type Acker interface {
	// Expect starts watching for t's ack signals on its runtime from now on.
	Expect(t nudge.Trigger)
	// Wait blocks until t is acked (returning the signal's name) or ctx ends.
	Wait(ctx context.Context, triggerID string) (signal string, err error)
	// Forget stops watching.
	Forget(triggerID string)
	// APIAck acks a trigger by an explicit call; false if nothing waits on it (or its
	// runtime does not take API acks). Only Pipeline.Ack calls it.
	APIAck(triggerID string) bool
	// OnScreen reports whether lines, a capture of the runtime's pane (scrollback and
	// screen), show the trigger's ack marker as the agent composed it (not its echo).
	OnScreen(runtimeID, triggerID string, lines []string) bool
}

// Fallbacker runs the fallback chain (resume, then spawn) for a trigger whose live path
// failed with code. It returns where the prompt went.
type Fallbacker interface {
	// keep: the runtime's pane runs another trigger's fallback launch; do not replace it.
	Fallback(ctx context.Context, t nudge.Trigger, code nudge.Code, keep bool) (nudge.Launched, error)
}

// Store is the pipeline's durable state (*store.DB): the write-behind queue, and the
// parts of the store it keeps triggers, gates, schedules and audit records in.
type Store interface {
	Flush()
	Settle()
	Unavailable() error // why the store cannot write now (nil: it can)
	Triggers() *store.Triggers
	Gates() *store.Gates
	Schedules() *store.Schedules
	AuditLog() *store.AuditLog
}

// Deps are the pipeline's collaborators.
type Deps struct {
	Store    Store
	Runtimes Runtimes
	Conn     func(workspace string) (Sender, error)
	Gates    Gates      // nil: never busy, always READY, composer unknown
	Acks     Acker      // nil: submitted is the final state
	Fallback Fallbacker // nil: failures stay failures
	Channel  Channel    // nil: every trigger is typed
	// Bus: from Open the pipeline reads pane output on it (echo and submit detection),
	// the news that lets a held trigger go (nudge.ReadinessChanged, OperatorQuiet,
	// RuntimeChanged), the prompts it is to deliver (nudge.FirstPrompt, HumanDone: the
	// orchestrator's sync) and the replies read in the agents' records (nudge.ReplyRead);
	// and it publishes every receipt change (nudge.TriggerChanged), a trigger held for a
	// person past the max defer window (nudge.CollisionHeld) and its typing's time
	// (nudge.TriggerTyped). nil:
	// it reads and tells nothing.
	Bus *nudge.Bus
}

// Request is one trigger request (POST /v1/triggers).
type Request struct {
	TriggerID     string `json:"trigger_id"`
	Workspace     string `json:"workspace"`
	Agent         string `json:"agent"`
	ThreadID      string `json:"thread_id"`
	Prompt        string `json:"prompt"`
	AckTimeoutMS  int64  `json:"ack_timeout_ms"`
	ForceOverride bool   `json:"force_override"`
	Reason        string `json:"reason"`
	// OverrideIntent is human_override or coordinator_override (seed 000 §13.2).
	OverrideIntent string `json:"override_intent,omitempty"`
	Caller         string `json:"-"`
	CallerUID      int    `json:"-"`
	ScheduleID     string `json:"-"`
	// Received is when the API began reading the request (zero: when Submit was called).
	Received time.Time `json:"-"`
}

// Pipeline accepts triggers and drives each to a final receipt. It is the one owner of
// everything the trigger pipeline keeps: the policy and collaborators (read-only after
// New), the goroutines it starts (Close cancels and joins them all), the ledger of
// triggers in flight, the lanes (one per runtime: order, gates, holds; lane.go), the
// gates' state (gateState) and the fallback bookkeeping (fallbacks). Its parts hold no
// pointer to one another: a lane's goroutine decides (decide), attempts (runAttempt),
// judges (next) and applies, in that order (flow.go).
type Pipeline struct {
	cfg    Config
	deps   Deps
	log    hclog.Logger
	env    attemptEnv      // what each attempt asks of Deps and Config
	ctx    context.Context // ends on Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the pipeline starts
	opened time.Time

	mu      sync.Mutex
	jobs    map[string]*job // triggers not yet closed, by id
	closed  bool            // Close has begun: no lane, SubmitAsync or inline typing starts
	waiters watchers        // Wait's: woken by changed

	lanes lanes     // by runtime id (lane.go)
	gate  gateState // the rate limits, the loop guard, the breakers, the sync holds
	fb    fallbacks // the fallback chains' bookkeeping (finish.go)
	news  news      // what it reads on the bus (news.go)
}

// gateState is what the gates count and hold across triggers, each under its own lock.
type gateState struct {
	rate     *rateLimiter // per thread of a runtime
	perRT    *rateLimiter // per runtime, over all its threads
	loops    *loopGuard
	breakers *breakers
	syncs    syncHolds // workers waiting for an orchestrator's sync (synchold.go)
}

// New returns a pipeline; call Open to start it.
func New(cfg Config, deps Deps) (*Pipeline, error) {
	cfg.fill()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("inject config: %w", err)
	}
	if deps.Store == nil || deps.Runtimes == nil || deps.Conn == nil {
		return nil, errors.New("inject: Store, Runtimes and Conn are required")
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pipeline{cfg: cfg, deps: deps, log: cfg.Logger.Named("inject"), ctx: ctx, cancel: cancel, jobs: map[string]*job{},
		env: attemptEnv{gates: deps.Gates, acks: deps.Acks, channel: deps.Channel, now: cfg.Now, bus: deps.Bus,
			echoTimeout: cfg.EchoTimeout, submitTimeout: cfg.SubmitTimeout, submitQuiet: cfg.SubmitQuiet},
		lanes: lanes{m: map[string]*lane{}},
		gate: gateState{
			rate:     newRateLimiter(store.GateRate, cfg.RateLimit, cfg.RatePer),
			perRT:    newRateLimiter(store.GateRuntimeRate, cfg.RuntimeRate, cfg.RatePer),
			loops:    newLoopGuard(cfg.LoopTurns, cfg.LoopRepeats),
			breakers: newBreakers(cfg.BreakerFailures, cfg.BreakerCooldown),
		},
		fb: newFallbacks(),
	}
	return p, nil
}

// Open resumes every trigger the store holds as not closed: queued and deferred ones are
// queued again, injected ones are checked in the pane before anything is typed again,
// submitted ones wait for their ack.
func (p *Pipeline) Open() error {
	p.opened = p.cfg.Now()
	p.restoreBreakers()
	gates, err := p.deps.Store.Gates().ListGates()
	if err != nil {
		return fmt.Errorf("load gates: %w", err)
	}
	p.restoreGates(gates, p.opened)
	open, err := p.deps.Store.Triggers().ListTriggers(store.TriggerFilter{OpenOnly: true})
	if err != nil {
		return fmt.Errorf("resume triggers: %w", err)
	}
	for _, t := range open {
		j := newJob(t, true)
		j.envelope = p.envelope(t, t.Prompt) // the stored prompt is the sanitized text
		close(j.created)
		p.adopt(j)
	}
	p.collectAsidesLeft()
	p.subscribe()
	return nil
}

// adopt registers a recovered job and queues it on its runtime's lane (or resumes its
// ack wait when it was already submitted).
func (p *Pipeline) adopt(j *job) {
	p.mu.Lock()
	p.jobs[j.id()] = j
	p.mu.Unlock()
	t := j.record()
	switch {
	case t.State == nudge.StateSubmitted && t.Fallback == "" && p.submittedIsAck(t):
		// Submitted is its ack (a program that cannot ack): the ack was decided before
		// the daemon stopped, only its write may not have landed. Waiting for an ack
		// that cannot come would type the prompt again.
		p.finishAcked(j, "submitted")
	case t.State == nudge.StateSubmitted && t.Fallback == "":
		p.goAwaitAck(j)
	case t.RuntimeID == "":
		p.unroutable(j, false)
	default:
		p.enqueue(j)
	}
}

// submittedIsAck reports whether t's runtime counts submitted as acked (its profile says
// so, or nothing acks at all), as markSubmitted decides it.
func (p *Pipeline) submittedIsAck(t nudge.Trigger) bool {
	if p.deps.Acks == nil {
		return true
	}
	rt, ok := p.deps.Runtimes.Get(t.RuntimeID)
	if !ok {
		return false
	}
	prof, _ := p.deps.Runtimes.Profile(rt.Agent)
	return prof.SubmittedIsAck
}

// Close stops every lane and waits for them. Open triggers stay in the store and are
// resumed by the next Open.
func (p *Pipeline) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.unsubscribe() // what is queued runs on a closing pipeline: it starts nothing new
	p.cancel()
	p.wg.Wait()
	return nil
}

func newTriggerID(now time.Time) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "trg_" + now.UTC().Format("20060102T150405") + "_" + hex.EncodeToString(b[:])
}

// PaneOutput takes a managed pane's output (nudge.OutputReader): Observe.
func (p *Pipeline) PaneOutput(runtimeID string, _ []byte) { p.Observe(runtimeID) }

// Observe records output of a runtime's pane (echo and submit detection). It is called
// on the control connection's read goroutine and never blocks.
func (p *Pipeline) Observe(runtimeID string) {
	if l := p.lane(runtimeID); l != nil {
		l.observe(p.cfg.Now())
	}
}

// Kick makes a runtime's lane re-check its deferred trigger now (the pane went quiet, a
// draft was cleared, the runtime was resumed).
func (p *Pipeline) Kick(runtimeID string) {
	p.kick(runtimeID)
}

// Depth is the number of triggers queued for a runtime.
func (p *Pipeline) Depth(runtimeID string) int {
	l := p.lane(runtimeID)
	if l == nil {
		return 0
	}
	return l.depth()
}

// Progress resets the loop guard for a thread of an agent ("" thread: all its threads),
// on a heartbeat cursor advance or an explicit unblock. The agent is its runtime, named
// by its role or its agent_id (agentKey).
func (p *Pipeline) Progress(workspace, agent, thread string) {
	prefix := p.agentKey(workspace, agent) + "\x00"
	if thread == "" {
		p.gate.loops.progressPrefix(prefix)
		return
	}
	p.gate.loops.progress(prefix + thread)
}

// Blocked reports whether the loop guard holds thread of an agent (named by its role or
// its agent_id), and why: a trigger on it would fail THREAD_AUTO_BLOCKED.
func (p *Pipeline) Blocked(workspace, agent, thread string) (bool, string) {
	return p.gate.loops.blocked(p.agentKey(workspace, agent) + "\x00" + thread)
}

// Unblock lifts the loop guard of thread for every agent whose workspace allow accepts
// (`nudge unblock THREAD` without --workspace and --agent) and returns the agents it
// unblocked, as workspace/agent.
func (p *Pipeline) Unblock(thread string, allow func(workspace string) bool) []string {
	var out []string
	for _, key := range p.gate.loops.keysOf(thread) {
		agent, _, _ := strings.Cut(key, "\x00")
		ws, _, _ := strings.Cut(agent, "/")
		if allow(ws) {
			p.gate.loops.progress(key)
			out = append(out, agent)
		}
	}
	return out
}

// Force delivers a deferred trigger now, bypassing the collision gate, with an operator
// identity and reason that the audit keeps (seed 000 §13.2).
func (p *Pipeline) Force(id, subject, reason, intent string) (nudge.Trigger, error) {
	if reason == "" {
		return nudge.Trigger{}, nudge.NewError(nudge.BadRequest, "a force override needs a reason")
	}
	if intent == "" {
		intent = "human_override"
	}
	if intent != "human_override" && intent != "coordinator_override" {
		return nudge.Trigger{}, nudge.NewError(nudge.BadRequest, "override_intent must be human_override or coordinator_override")
	}
	j := p.inflight(id)
	if j == nil {
		return nudge.Trigger{}, nudge.NewError(nudge.NotFound, "no trigger "+id+" in flight")
	}
	j.forced.Store(true)
	rec := j.update(p.cfg.Now(), func(t *nudge.Trigger) {
		t.ForceOverride, t.OverrideIntent = true, intent
		t.Reason = intent + ": " + reason
		if subject != "" {
			t.Caller = subject
		}
	})
	p.persist(j, p.audit("force_override_requested", rec, rec.Reason))
	p.Kick(rec.RuntimeID)
	return rec, nil
}

var errNotFallback = errors.New("not a fallback trigger")
