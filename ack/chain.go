package ack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/panes"
)

// ChainConfig is the fallback policy (seed 000 §12, seed 001 §7.3). Zero values take the
// seed defaults.
type ChainConfig struct {
	ResumeAttempts    int           // resume launches before spawning fresh (2; 0: spawn at once)
	StaleAfter        time.Duration // a session whose last heartbeat is older is not resumed (12h)
	CrashLoopFailures int           // failures within CrashLoopWindow that skip resume (3)
	CrashLoopWindow   time.Duration // (15m)
	LaunchGrace       time.Duration // a launch must stay up this long, or exit 0, to count (1.5s)
	Bus               *nudge.Bus    // every step is published on it (nudge.FallbackStep); nil: none
	Now               func() time.Time
	Logger            hclog.Logger
}

// DefaultChainConfig returns the seed defaults: 2 resume attempts, a session stale after
// 12h, a crash loop of 3 failures in 15m, a launch grace of 1.5s.
func DefaultChainConfig() ChainConfig {
	c := ChainConfig{ResumeAttempts: 2}
	c.fill()
	c.Now, c.Logger = nil, nil
	return c
}

func (c *ChainConfig) fill() {
	if c.StaleAfter == 0 {
		c.StaleAfter = 12 * time.Hour
	}
	if c.CrashLoopFailures == 0 {
		c.CrashLoopFailures = 3
	}
	if c.CrashLoopWindow == 0 {
		c.CrashLoopWindow = 15 * time.Minute
	}
	if c.LaunchGrace == 0 {
		c.LaunchGrace = 1500 * time.Millisecond
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
}

// Launcher starts processes for the chain (*panes.Registry).
type Launcher interface {
	Get(id string) (nudge.Runtime, bool)
	Profile(name string) (panes.Profile, bool)
	// RelaunchWith runs argv once in the runtime's own pane, ending whatever ran there
	// first; ended says how that program ended ("" when none ran).
	RelaunchWith(ctx context.Context, id string, argv []string, reason string) (paneID, ended string, err error)
	// PaneExit reports whether the pane's process runs, or how it exited.
	PaneExit(ctx context.Context, workspace, paneID string) (alive bool, status *int, err error)
	// HoldRestarts keeps the registry from restarting the runtime while the chain runs.
	HoldRestarts(id string) (release func())
	// SpawnAside starts a managed runtime beside from (a fallback that must not end
	// from's process): fresh, or resuming from's session. It gets no prompt at launch.
	SpawnAside(ctx context.Context, from nudge.Runtime, resume bool) (nudge.Runtime, error)
}

// Auditor keeps the chain's audit records (*store.AuditLog).
type Auditor interface {
	AppendAudit(recs ...nudge.AuditRecord) ([]nudge.AuditRecord, error)
}

// Step is one step of a fallback chain, as audited and published.
type Step = nudge.FallbackStep

// Chain runs the fallback chain: resume (up to ResumeAttempts), then spawn. A resume or
// spawn is a launch: it succeeds when the process started and stayed up past LaunchGrace
// (or exited 0); completion is observed later through acks and heartbeats.
type Chain struct {
	cfg   ChainConfig
	l     Launcher
	audit Auditor
	log   hclog.Logger

	mu     sync.Mutex
	closed bool
}

// NewChain returns a chain over l, auditing into audit.
func NewChain(cfg ChainConfig, l Launcher, audit Auditor) *Chain {
	cfg.fill()
	return &Chain{cfg: cfg, l: l, audit: audit, log: cfg.Logger.Named("fallback")}
}

// Close is a no-op kept for symmetry; launches in flight end with their context.
func (c *Chain) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return nil
}

// run is one chain's state.
type run struct {
	t     nudge.Trigger
	rt    nudge.Runtime
	prof  panes.Profile
	cause nudge.Code
	keep  bool // the pane runs another trigger's fallback launch
	chain []string
}

// keepPane: the chain must not end the pane's process: the cause says so, another
// trigger's launch runs there, or the pane is the user's own (panes.UsersPane).
func (r *run) keepPane() bool { return r.keep || keepPane(r.cause) || panes.UsersPane(r.rt) }

// Fallback runs the chain for t, whose live delivery failed with cause. It returns where
// the agent was launched (the backend, runtime and pane), or a *nudge.Error with
// RESUME_FAILED or SPAWN_FAILED. No launch carries the prompt on its command line, where
// every local uid reads it: a resume reopens the session (Profile.ResumeLiveArgv) and a
// spawn starts the agent bare, Given is false, and the caller delivers the prompt live
// to the launched runtime once it is ready.
//
// A fallback that must not end the runtime's process (a human is at its pane, nudge
// does not manage it, or the pane is the user's own) resumes or spawns a new managed
// runtime beside it (ROLE-fb-SUFFIX): nothing is ever typed into that pane.
//
// keep asks for the same care for another reason: the runtime's pane runs another
// trigger's fallback launch, which must not be replaced.
func (c *Chain) Fallback(ctx context.Context, t nudge.Trigger, cause nudge.Code, keep bool) (nudge.Launched, error) {
	rt, ok := c.l.Get(t.RuntimeID)
	if !ok {
		return nudge.Launched{}, nudge.NewError(nudge.SpawnFailed, "no runtime to fall back to for "+t.WorkspaceID+"/"+t.Agent)
	}
	prof, _ := c.l.Profile(rt.Agent)
	defer c.l.HoldRestarts(rt.RuntimeID)()
	r := &run{t: t, rt: rt, prof: prof, cause: cause, keep: keep}
	if why := c.skipResume(r); why != "" {
		c.step(r, "fallback_resume_skipped", Step{Error: why})
	} else {
		for i := 0; i < c.cfg.ResumeAttempts; i++ {
			if l, err := c.resume(ctx, r); err == nil {
				return l, nil
			} else if ctx.Err() != nil {
				return nudge.Launched{}, ctx.Err()
			}
		}
	}
	if r.keepPane() {
		return c.spawnAside(ctx, r)
	}
	return c.spawn(ctx, r)
}

// skipResume says why the chain goes straight to spawn, or "".
func (c *Chain) skipResume(r *run) string {
	now := c.cfg.Now()
	switch {
	case c.cfg.ResumeAttempts == 0:
		return "resume attempts is 0 (serve --resume-attempts)"
	case len(r.prof.Resume) == 0:
		return "profile " + r.prof.Name + " has no resume command"
	case r.rt.SessionID == "":
		return "no session id known for the runtime"
	case !r.rt.LastHeartbeatAt.IsZero() && now.Sub(r.rt.LastHeartbeatAt) > c.cfg.StaleAfter:
		return "session heartbeat is stale (last " + r.rt.LastHeartbeatAt.Format(time.RFC3339) + ")"
	case c.crashLooping(r.rt, now):
		return "crash loop: spawning directly"
	case operatorAtPane(r.cause):
		return "the live process still holds the session (an operator is at the pane)"
	case r.keep:
		return "another trigger's fallback launch holds the session in the runtime's pane"
	case panes.UsersPane(r.rt):
		return "the runtime's pane is in the user's own session, where nudge opens no window to resume in"
	}
	if r.prof.ResumeLiveArgv(r.rt.SessionID) == nil {
		return "profile " + r.prof.Name + " cannot resume session " + r.rt.SessionID
	}
	return ""
}

func (c *Chain) crashLooping(rt nudge.Runtime, now time.Time) bool {
	n := 0
	for _, f := range rt.Failures {
		if now.Sub(f) <= c.cfg.CrashLoopWindow {
			n++
		}
	}
	return n >= c.cfg.CrashLoopFailures
}

// operatorAtPane: a human is using the live agent, which so still holds its session.
func operatorAtPane(cause nudge.Code) bool {
	return cause == nudge.DeferTimeout || cause == nudge.OperatorBusy
}

// keepPane: the chain must not end the pane's process (a human is using it, or nudge does
// not manage it), so launches go to a window of their own.
func keepPane(cause nudge.Code) bool {
	return operatorAtPane(cause) || cause == nudge.UnmanagedRuntime
}

func (c *Chain) resume(ctx context.Context, r *run) (nudge.Launched, error) {
	r.chain = append(r.chain, "resume")
	if r.keepPane() {
		return c.beside(ctx, r, "resume")
	}
	argv := r.prof.ResumeLiveArgv(r.rt.SessionID)
	pane, err := c.launch(ctx, r, "resume", argv, nudge.ResumeFailed)
	return nudge.Launched{Backend: nudge.BackendResume, RuntimeID: r.rt.RuntimeID, PaneID: pane}, err
}

// spawn starts the runtime afresh in its own pane, without the prompt (Given false: the
// caller types it into the fresh agent).
func (c *Chain) spawn(ctx context.Context, r *run) (nudge.Launched, error) {
	argv, err := r.prof.LaunchArgv(nil, "")
	if err != nil {
		return nudge.Launched{}, c.failed(r, "spawn", nudge.SpawnFailed, err)
	}
	r.chain = append(r.chain, "spawn")
	pane, err := c.launch(ctx, r, "spawn", argv, nudge.SpawnFailed)
	return nudge.Launched{Backend: nudge.BackendSpawn, RuntimeID: r.rt.RuntimeID, PaneID: pane}, err
}

// spawnAside starts a new managed runtime beside the one whose pane must be kept.
func (c *Chain) spawnAside(ctx context.Context, r *run) (nudge.Launched, error) {
	r.chain = append(r.chain, "spawn")
	return c.beside(ctx, r, "spawn")
}

// beside starts a managed runtime beside the one whose pane must be kept: resuming its
// session (kind "resume") or fresh ("spawn").
func (c *Chain) beside(ctx context.Context, r *run, kind string) (nudge.Launched, error) {
	code, backend := nudge.SpawnFailed, nudge.BackendSpawn
	if kind == "resume" {
		code, backend = nudge.ResumeFailed, nudge.BackendResume
	}
	c.step(r, "fallback_"+kind+"_started", Step{Where: "runtime"})
	rt, err := c.l.SpawnAside(ctx, r.rt, kind == "resume")
	if err == nil {
		err = c.stayedUp(ctx, rt.WorkspaceID, rt.PaneID)
	}
	if err != nil {
		return nudge.Launched{}, c.failed(r, kind, code, err)
	}
	c.step(r, "fallback_"+kind+"_succeeded", Step{Argv: rt.Argv, Where: "runtime " + rt.RuntimeID + " pane " + rt.PaneID})
	return nudge.Launched{Backend: backend, RuntimeID: rt.RuntimeID, PaneID: rt.PaneID}, nil
}

// launch starts argv in the runtime's own pane (never one that must be kept: those go
// beside), waits LaunchGrace to see that it stayed up, and returns its pane.
func (c *Chain) launch(ctx context.Context, r *run, kind string, argv []string, code nudge.Code) (string, error) {
	s := Step{Argv: elide(argv, r.t.Prompt), Where: "pane"}
	c.step(r, "fallback_"+kind+"_started", s)
	pane, ended, err := c.l.RelaunchWith(ctx, r.rt.RuntimeID, argv, "fallback "+kind+" for trigger "+r.t.TriggerID)
	s.Ended = ended
	if err == nil {
		err = c.stayedUp(ctx, r.rt.WorkspaceID, pane)
	}
	if err != nil {
		return "", c.failed(r, kind, code, err)
	}
	s.Where += " " + pane
	c.step(r, "fallback_"+kind+"_succeeded", s)
	return pane, nil
}

// stayedUp waits LaunchGrace and checks the launched process: running, or exited 0.
func (c *Chain) stayedUp(ctx context.Context, workspace, pane string) error {
	t := time.NewTimer(c.cfg.LaunchGrace)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	alive, status, err := c.l.PaneExit(ctx, workspace, pane)
	switch {
	case err != nil:
		return err
	case alive:
		return nil
	case status != nil && *status == 0:
		return nil
	case status != nil:
		return fmt.Errorf("the launched process exited with status %d within %s", *status, c.cfg.LaunchGrace)
	default:
		return fmt.Errorf("the launched process exited within %s", c.cfg.LaunchGrace)
	}
}

func (c *Chain) failed(r *run, kind string, code nudge.Code, err error) error {
	if ne := (*nudge.Error)(nil); errors.As(err, &ne) && ne.Code == nudge.HostUnreachable {
		code = nudge.HostUnreachable // the cause, not the step: the runtime's host cannot be reached
	}
	c.step(r, string(code), Step{Error: err.Error(), Code: string(code)})
	c.log.Warn("fallback step failed", "trigger_id", r.t.TriggerID, "runtime_id", r.rt.RuntimeID, "step", kind, "err", err)
	return nudge.NewError(code, kind+": "+err.Error())
}

// step audits and publishes one step.
func (c *Chain) step(r *run, event string, s Step) {
	s.Time, s.Event, s.Workspace = c.cfg.Now(), event, r.t.WorkspaceID
	if s.Workspace == "" {
		s.Workspace = r.rt.WorkspaceID
	}
	s.TriggerID, s.ThreadID, s.RuntimeID = r.t.TriggerID, r.t.ThreadID, r.rt.RuntimeID
	s.Cause, s.Chain = string(r.cause), append([]string(nil), r.chain...)
	rec := nudge.AuditRecord{Event: event, TriggerID: r.t.TriggerID, ThreadID: r.t.ThreadID,
		RuntimeID: r.rt.RuntimeID, Workspace: r.rt.WorkspaceID, Code: nudge.Code(s.Code), Reason: s.Error, Detail: jsonOf(s)}
	if _, err := c.audit.AppendAudit(rec); err != nil {
		c.log.Error("audit fallback step", "err", err)
	}
	nudge.Publish(c.cfg.Bus, s)
}

// elide replaces the prompt in an argv with a placeholder for logs and audit.
func elide(argv []string, prompt string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == prompt && prompt != "" || strings.Contains(a, prompt) && len(prompt) > 16 {
			a = fmt.Sprintf("<prompt %d bytes>", len(a))
		}
		out[i] = a
	}
	return out
}
