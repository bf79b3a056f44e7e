package inject

import (
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nudgehq/nudge"
)

// lanes is the runtimes' delivery lanes and the gates in front of them: order, gates and
// holds. It owns the lanes by runtime id (under mu), and the rate limiter, the loop guard
// and the circuit breakers (each under its own lock). It runs one goroutine per lane
// (runLane, started on the lane's first trigger, stopped by the pipeline's Close) and a
// timer goroutine per open breaker. A lane's goroutine hands the trigger that may go to
// the typist, and one that must not to the finisher (failed, or the fallback chain).
type lanes struct {
	*core
	typist *typist
	fin    *finisher

	mu       sync.Mutex
	m        map[string]*lane // by runtime id
	rate     *rateLimiter     // per thread of a runtime
	perRT    *rateLimiter     // per runtime, over all its threads
	loops    *loopGuard
	breakers *breakers
	syncs    syncHolds // workers waiting for an orchestrator's sync (synchold.go)

	// delivering counts the deliveries in progress: typing, the echo wait, Enter and
	// its confirmation, on a lane's goroutine or typed by a request's (typeInline, then
	// the lane's cont). While it is above zero a new trigger is not typed on its
	// request's goroutine and its request does not wait for its lane: the answer would
	// wait behind the other deliveries' commands in tmux and its own typing (an accept's
	// p99 under a backlog was the typing's).
	delivering atomic.Int32
}

// enqueue puts j at the back of its runtime's lane, starting the lane if needed. A job
// that queues behind others, or while any delivery is in progress, has had its first
// decision: it waits its turn (Submit answers "queued" at once instead of
// waiting on the deliveries in progress and on its own typing behind them).
func (ls *lanes) enqueue(j *job) {
	if behind := ls.laneFor(j.t.RuntimeID).push(j, false); behind || ls.delivering.Load() > 0 {
		j.decide()
	}
}

// typeInline types a new trigger from the request's goroutine when its lane is idle (no
// delivery running, nothing queued): no goroutine hop between the request and the write
// to tmux. It runs the lane's gates and deliver's steps up to the typing on this
// goroutine and leaves the rest of the delivery to the lane's goroutine. It reports false,
// having changed nothing, when the trigger must take the lane's usual path: the lane is
// busy, the trigger needs a look at the pane first (a pane check, or a retry), or a gate
// holds it (the lane's goroutine then decides, as for any queued trigger).
func (ls *lanes) typeInline(j *job) bool {
	if !ls.enter() { // Close waits for a typing in flight on a request's goroutine too
		return false
	}
	defer ls.wg.Done()
	l := ls.laneFor(j.t.RuntimeID)
	if ls.delivering.Load() > 0 || !l.turn.TryLock() {
		return false
	}
	defer func() {
		l.inline = false
		l.turn.Unlock()
		l.kick() // the rest of the delivery, or the next decision, is the lane's
	}()
	if l.cont != nil || l.depth() > 0 || j.maybeTyped || j.record().Attempts > 0 || ls.typist.needsPaneCheck(l, j) {
		return false
	}
	rt, ok := ls.deps.Runtimes.Get(l.id)
	if !ok {
		return false
	}
	reg := trace.StartRegion(j.traceCtx(), "lane.gate")
	v := ls.gate(j, rt, ls.cfg.Now())
	reg.End()
	if v.kind != proceed {
		return false
	}
	trace.Log(j.traceCtx(), "lane", "inline")
	l.inline = true
	ls.delivering.Add(1)
	ls.typist.deliver(l, j, rt)
	if l.cont == nil { // else the delivery goes on in the lane's cont, which ends the count
		ls.delivering.Add(-1)
	}
	return true
}

func (ls *lanes) laneFor(id string) *lane {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l, ok := ls.m[id]
	if !ok {
		l = newLane(id)
		ls.m[id] = l
		ls.goIfOpen(func() { ls.runLane(l) })
	}
	return l
}

// get returns runtime id's lane, nil if it has none. It never blocks for long: the
// control connection's read goroutine calls it for every chunk of output (observe).
func (ls *lanes) get(id string) *lane {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.m[id]
}

func (ls *lanes) removeFromLane(j *job) {
	if l := ls.get(j.record().RuntimeID); l != nil {
		l.remove(j)
	}
}

// kick makes runtime id's lane look again now.
func (ls *lanes) kick(id string) {
	if l := ls.get(id); l != nil {
		l.kick()
	}
}

// runLane delivers one runtime's triggers until the pipeline closes.
func (ls *lanes) runLane(l *lane) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		l.turn.Lock()
		if cont := l.cont; cont != nil {
			l.cont = nil
			cont()
			ls.delivering.Add(-1) // counted by typeInline
		}
		wait := ls.stepLane(l)
		l.turn.Unlock()
		if wait == 0 {
			continue
		}
		if wait < 0 {
			wait = time.Hour
		}
		resetTimer(timer, wait)
		select {
		case <-ls.ctx.Done():
			return
		case <-l.wake:
		case <-timer.C:
		}
	}
}

// verdict is a gate's decision for the job at the front of a lane.
type verdict struct {
	kind  verdictKind
	code  nudge.Code
	why   string
	until time.Time // hold: when to look again (zero: at the next recheck)
	// poll: a hold that may end without a wake-up (the agent draws after it took the
	// previous prompt in) is looked at again this soon, before until.
	poll time.Duration
}

// verdictKind is what a verdict says to do with the job.
type verdictKind uint8

const (
	proceed  verdictKind = iota // deliver it now
	hold                        // defer it (code says why; until when to look again)
	fail                        // fail it with code
	fallback                    // give up the live path: the fallback chain (resume, spawn)
	// waitConn: the workspace's control connection is down, which says nothing about
	// the pane; try again shortly (connRetry).
	waitConn
)

// stepLane makes one decision for the lane and returns how long it should wait before
// the next one (0: go on at once; negative: until woken). It takes the first trigger
// that may go now — forced ones first, then the rest in queue order — and never one
// whose thread has an earlier trigger still waiting (order within a thread is kept). A
// per-thread gate (rate limit, a retry's backoff) so holds only its own thread; a
// runtime-wide hold (an operator at the pane, a busy agent) holds each trigger on its
// own clock, each receipt saying why and until when.
func (ls *lanes) stepLane(l *lane) time.Duration {
	var buf [16]*job
	jobs := l.snapshot(buf[:0])
	if len(jobs) == 0 {
		return -1
	}
	now := ls.cfg.Now()
	rt, ok := ls.deps.Runtimes.Get(l.id)
	if !ok {
		ls.unregistered(l, jobs)
		return 0
	}
	wait := time.Duration(-1)
	var waiting []string // threads with an earlier trigger still waiting
	held := func(thread string, d time.Duration) {
		d = max(d, time.Millisecond)
		if wait < 0 || d < wait {
			wait = d
		}
		waiting = append(waiting, thread)
	}
	for pass := 0; pass < 2; pass++ {
		for _, j := range jobs {
			t := j.record()
			if t.ForceOverride != (pass == 0) {
				continue
			}
			if !t.ForceOverride && slices.Contains(waiting, t.ThreadID) {
				continue // behind its thread's earlier trigger
			}
			if j.retryAt.After(now) {
				held(t.ThreadID, j.retryAt.Sub(now))
				continue
			}
			if d, hold := ls.decide(l, j, rt, now); hold {
				held(t.ThreadID, d)
				continue
			}
			return 0
		}
	}
	return wait
}

// unregistered hands every trigger of a lane whose runtime is gone to the fallback chain.
func (ls *lanes) unregistered(l *lane, jobs []*job) {
	for _, j := range jobs {
		if l.remove(j) {
			ls.fin.startFallback(j, nudge.TargetNotFound, "runtime is no longer registered")
		}
	}
}

// decide applies the gates to j, the first of its thread in l that may go now, and acts
// on the verdict. A hold defers j and says how soon to look again (held); any other
// verdict takes j out of the lane: delivered, failed, or handed to the fallback chain.
func (ls *lanes) decide(l *lane, j *job, rt nudge.Runtime, now time.Time) (again time.Duration, held bool) {
	reg := trace.StartRegion(j.traceCtx(), "lane.gate")
	v := ls.gate(j, rt, now)
	reg.End()
	switch v.kind {
	case hold:
		ls.markDeferred(j, v, now)
		return recheckIn(v, now, ls.cfg.DeferRecheck), true
	case fail:
		if l.remove(j) {
			j.endTask()
			ls.fin.finishFailed(j, v.code, v.why)
		}
	case fallback:
		if l.remove(j) {
			j.endTask()
			ls.fin.startFallback(j, v.code, v.why)
		}
	default:
		if l.remove(j) {
			ls.delivering.Add(1)
			ls.typist.deliver(l, j, rt)
			ls.delivering.Add(-1)
		}
	}
	return 0, false
}

// recheckIn is how soon a lane looks again at a trigger a hold verdict v deferred at now:
// at the next recheck, when the hold may end, or at its poll, whichever comes first.
func recheckIn(v verdict, now time.Time, recheck time.Duration) time.Duration {
	d := recheck
	if !v.until.IsZero() && v.until.Sub(now) < d {
		d = v.until.Sub(now)
	}
	if v.poll > 0 && v.poll < d {
		d = v.poll
	}
	return d
}

// gate applies the gates in order: runtime alive, loop guard, force, circuit breaker,
// pause, rate limit, human collision, readiness. The hold clock runs only while an agent
// or runtime state holds the trigger.
func (ls *lanes) gate(j *job, rt nudge.Runtime, now time.Time) verdict {
	v := ls.gates(j, rt, now)
	if v.kind != hold || !agentHold(v.code) {
		j.holdStart = time.Time{}
	}
	return v
}

func (ls *lanes) gates(j *job, rt nudge.Runtime, now time.Time) verdict {
	t := j.record()
	if !rt.Managed {
		// Never typed into (seed 001 §4.2), also for a trigger that came back to the
		// lane after waiting for another trigger's fallback.
		return verdict{kind: fallback, code: nudge.UnmanagedRuntime, why: "runtime is not managed: live delivery skipped"}
	}
	switch rt.Status {
	case nudge.StatusFailed:
		if why := ls.fin.refusedKeys(rt); why != "" {
			return verdict{kind: fail, code: nudge.SendKeysError, why: "runtime is failed: " + why + " (nudge restart " + rt.RuntimeID + " once tmux takes keys again)"}
		}
		return verdict{kind: fallback, code: nudge.PaneDead, why: "runtime is " + string(rt.Status)}
	case nudge.StatusOffline, nudge.StatusDeregistered, nudge.StatusExited:
		if st, ok := ls.deps.Runtimes.(interface{ Stopped(string) bool }); ok && rt.Status == nudge.StatusOffline && st.Stopped(rt.RuntimeID) {
			// Stopped by an operator: it stays down; no fallback starts it again.
			return verdict{kind: fail, code: nudge.RuntimeStopped, why: "runtime " + rt.RuntimeID +
				" was stopped (nudge stop) and stays stopped: start it again with `nudge restart " + rt.RuntimeID + "`"}
		}
		return verdict{kind: fallback, code: nudge.PaneDead, why: "runtime is " + string(rt.Status)}
	case nudge.StatusStarting, nudge.StatusFallbackResume, nudge.StatusSpawnRecovery:
		return ls.startingHold(j, rt, now)
	}
	key := threadKey(t)
	if t.ThreadID != "" && t.ScheduleID == "" {
		if b, why := ls.loops.blocked(key); b {
			return verdict{kind: fail, code: nudge.ThreadAutoBlocked, why: why}
		}
	}
	if t.ForceOverride {
		// Explicit operator intent (seed 000 §13.2, §14: force-inject a deferred trigger):
		// past the pause, the breaker, the operator and the readiness. Past the rate limit
		// and a dialog only when an operator forced it (Force, admin): a force_override
		// asked with the trigger is a trigger token's own word, and the runtime's budget
		// and the dialog's answer verb hold for it.
		if j.forced.Load() {
			return verdict{kind: proceed}
		}
		if ok, until := ls.rateCheck(t, now); !ok {
			return verdict{kind: hold, code: nudge.TriggerRateLimited, why: "rate limit reached (force_override does not lift it; an operator's nudge force does)", until: until}
		}
		// Nor into a dialog: typed there, its Enter answers it, for a caller that may not
		// answer dialogs (the answer verb), past the live-dialog rule and the audit.
		if ls.deps.Gates != nil && ls.deps.Gates.Readiness(rt) == nudge.NeedsConfirmation {
			return ls.holdFor(j, rt, now, nudge.AgentNeedsConfirmation, "agent shows a dialog: force_override does not type into it (answer it: nudge answer; an operator's nudge force does)", time.Time{})
		}
		return verdict{kind: proceed}
	}
	// A fallback's own delivery into the runtime it launched (the prompt that used to go
	// on that launch's command line) is not held by the breaker its failure opened.
	if until, why, open := ls.breakers.admit(rt.RuntimeID, t.TriggerID, now); open && t.Fallback == "" {
		return ls.holdFor(j, rt, now, nudge.RuntimeCooldown, why, until)
	}
	if rt.Paused {
		return ls.holdFor(j, rt, now, nudge.RuntimePaused, "triggers paused for this runtime", time.Time{})
	}
	if ok, until := ls.rateCheck(t, now); !ok {
		return verdict{kind: hold, code: nudge.TriggerRateLimited, why: "rate limit reached", until: until}
	}
	if v, held := ls.collision(j, t, rt, now); held {
		return v
	}
	if v, held := ls.syncGate(j, rt, now); held {
		return v
	}
	return ls.readiness(j, rt, now)
}

// startingHold holds a trigger for a runtime that cannot take one yet: still starting (its
// agent has not shown READY: RUNTIME_STARTING until its start deadline, when the registry
// fails the start and the trigger takes the fallback path), or being relaunched by a
// fallback (FALLBACK_IN_PROGRESS on the hold clock: a resume run in the runtime's pane
// reads no input). Nothing is typed into it meanwhile.
func (ls *lanes) startingHold(j *job, rt nudge.Runtime, now time.Time) verdict {
	why := "runtime is " + rt.Status + ": not ready for input yet"
	if rt.Status != nudge.StatusStarting {
		return ls.holdFor(j, rt, now, nudge.FallbackInProgress, string(why), time.Time{})
	}
	v := verdict{kind: hold, code: nudge.RuntimeStarting, why: string(why)}
	if sd, ok := ls.deps.Runtimes.(interface{ StartDeadline(string) time.Time }); ok {
		if until := sd.StartDeadline(rt.RuntimeID); until.After(now) {
			v.until = until
		}
	}
	return v
}

func (ls *lanes) collision(j *job, t nudge.Trigger, rt nudge.Runtime, now time.Time) (verdict, bool) {
	if ls.deps.Gates == nil {
		return verdict{}, false
	}
	busy, until, why := ls.deps.Gates.Collision(rt)
	if !busy {
		j.deferStart, j.collided = time.Time{}, false
		return verdict{}, false
	}
	if j.deferStart.IsZero() {
		j.deferStart = now
	}
	limit := j.deferStart.Add(ls.cfg.MaxDefer)
	if !now.Before(limit) {
		return ls.operatorHold(j, rt.RuntimeID, j.deferStart, until, now, why), true
	}
	if until.IsZero() || until.After(limit) {
		until = limit
	}
	return verdict{kind: hold, code: nudge.OperatorBusy, why: why, until: until}, true
}

// readiness holds a trigger for an agent that cannot take it now: a confirmation dialog
// (never typed into unless forced), or, for an agent that does not queue input, a busy
// or not understood screen.
func (ls *lanes) readiness(j *job, rt nudge.Runtime, now time.Time) verdict {
	if ls.deps.Gates == nil {
		return verdict{kind: proceed}
	}
	if in, ok := ls.deps.Gates.(Intake); ok {
		// Also for an agent that queues input: typed now, the prompt would wait behind the
		// one it reads, and its receipt would not say so.
		if id, until, ok := in.Intaking(rt); ok && id != j.id() {
			v := ls.holdFor(j, rt, now, nudge.AgentBusy, "agent is BUSY taking in trigger "+id+
				"'s prompt: it left the composer and the agent has drawn nothing since", until)
			v.poll = intakePoll
			return v
		}
	}
	prof, _ := ls.deps.Runtimes.Profile(rt.Agent)
	var code nudge.Code
	r := ls.deps.Gates.Readiness(rt)
	if w, ok := ls.deps.Gates.(Working); ok {
		j.typedBusy = r == nudge.Busy && w.Working(rt) // let through only if the agent queues input
	}
	switch {
	case r == nudge.NeedsConfirmation:
		code = nudge.AgentNeedsConfirmation
	case r == nudge.Busy && !prof.QueuesInput:
		code = nudge.AgentBusy
	case r == nudge.Unknown && !prof.QueuesInput:
		code = nudge.AgentUnknown
	}
	if code == "" {
		return verdict{kind: proceed}
	}
	return ls.holdFor(j, rt, now, code, "agent is "+string(ls.deps.Gates.Readiness(rt)), time.Time{})
}

// takeTurn counts the delivery for the rate limiter and the loop guard.
func (ls *lanes) takeTurn(j *job) {
	t := j.record()
	key, now := threadKey(t), ls.cfg.Now()
	ls.rate.take(key, now)
	ls.perRT.take(runtimeKey(t), now)
	if t.ThreadID != "" && t.ScheduleID == "" && t.Attempts == 0 {
		if tripped, why := ls.loops.turn(key, t.Prompt); tripped {
			ls.log.Warn("thread auto-blocked", "thread_id", t.ThreadID, "agent_id", t.Agent, "why", why)
		}
	}
}

// intakePoll is how often a trigger held behind another's intake looks again: the agent's
// first drawing ends the intake without waking the lane.
const intakePoll = 100 * time.Millisecond

// rateCheck applies both rate limits: the thread's (RateLimit), and the runtime's over
// all its threads (RuntimeRate), so no count of thread ids, and neither name of the
// agent, buys a runtime more triggers. Refused, it says when both let one through.
func (ls *lanes) rateCheck(t nudge.Trigger, now time.Time) (bool, time.Time) {
	okThread, untilThread := ls.rate.check(threadKey(t), now)
	okRT, untilRT := ls.perRT.check(runtimeKey(t), now)
	switch {
	case okThread && okRT:
		return true, time.Time{}
	case okThread:
		return false, untilRT
	case okRT || untilThread.After(untilRT):
		return false, untilThread
	}
	return false, untilRT
}

// The gates' keys name the runtime a trigger went to, never the name its caller gave
// the agent: workspace/role (runtimeKey), and, for a thread, workspace/role NUL thread
// (threadKey; the loop guard's, and the thread's rate limit's).

// runtimeKey is workspace/role of t's runtime, from its id (panes.RuntimeID: the first
// '.' ends the workspace), whether t named the agent by its role or its agent_id.
func runtimeKey(t nudge.Trigger) string {
	ws, role, ok := strings.Cut(strings.TrimPrefix(t.RuntimeID, "rt_"), ".")
	if !ok || ws != t.WorkspaceID || role == "" {
		return t.WorkspaceID + "/" + t.Agent
	}
	return ws + "/" + role
}

func threadKey(t nudge.Trigger) string { return runtimeKey(t) + "\x00" + t.ThreadID }

// agentKey is workspace/role of the runtime a caller names agent (its role or its
// agent_id), or workspace/agent when there is none.
func (ls *lanes) agentKey(workspace, agent string) string {
	if rt, ok := ls.deps.Runtimes.Lookup(workspace, agent); ok {
		return rt.WorkspaceID + "/" + rt.Role
	}
	return workspace + "/" + agent
}
