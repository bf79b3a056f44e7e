package inject

import (
	"runtime/trace"
	"slices"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
)

// A trigger's way through its lane, in one direction: the lane's goroutine (runLane)
// takes the first trigger that may go (stepLane), gathers what the gates say of it
// (view) and decides (decide: a verdict); a trigger that may go is delivered: the lane
// makes an attempt (newAttempt), runAttempt types it into tmux and returns an outcome,
// next judges the outcome (a step), and the lane applies the step (apply: the store,
// the audit, the queue, the ack wait or the fallback chain). A request's goroutine may
// make the first decision and the typing itself for an idle lane (typeInline); the lane's
// goroutine then goes on from the typing's outcome (lane.cont).

// runLane delivers one runtime's triggers until the pipeline closes.
func (p *Pipeline) runLane(l *lane) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		l.turn.Lock()
		p.drainEnds(l)
		if c := l.cont; c.j != nil {
			l.cont = typed{}
			p.carry(l, c.j, c.rt, c.conn, c.o)
			p.lanes.delivering.Add(-1) // counted by typeInline
		}
		wait := p.stepLane(l)
		l.turn.Unlock()
		if wait == 0 {
			continue
		}
		if wait < 0 {
			wait = time.Hour
		}
		resetTimer(timer, wait)
		select {
		case <-p.ctx.Done():
			l.turn.Lock()
			p.drainEnds(l) // those posted before the close
			l.turn.Unlock()
			return
		case <-l.wake:
		case <-l.endc:
		case <-timer.C:
		}
	}
}

// verdict is decide's answer for the job at the front of a lane (and a pane look's).
type verdict struct {
	kind  verdictKind
	code  nudge.Code
	why   string
	until time.Time // hold: when to look again (zero: at the next recheck)
	// poll: a hold that may end without a wake-up (the agent draws after it took the
	// previous prompt in) is looked at again this soon, before until.
	poll time.Duration

	// What decide asks the lane to do besides: the job's clocks after the gates, take
	// the breaker's probe slot, drop the sync hold that ended, quote the pane's last
	// lines in why (a hold that expired), report an operator's collision.
	clocks    jobClocks
	probe     bool
	dropSync  bool
	evidence  bool
	collision *Collision
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
func (p *Pipeline) stepLane(l *lane) time.Duration {
	var buf [16]*job
	jobs := l.snapshot(buf[:0])
	if len(jobs) == 0 {
		return -1
	}
	now := p.cfg.Now()
	rt, ok := p.deps.Runtimes.Get(l.id)
	if !ok {
		p.unregistered(l, jobs)
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
			if j.clocks.retryAt.After(now) {
				held(t.ThreadID, j.clocks.retryAt.Sub(now))
				continue
			}
			if d, hold := p.decideFor(l, j, rt, now); hold {
				held(t.ThreadID, d)
				continue
			}
			return 0
		}
	}
	return wait
}

// unregistered hands every trigger of a lane whose runtime is gone to the fallback chain.
func (p *Pipeline) unregistered(l *lane, jobs []*job) {
	for _, j := range jobs {
		if l.remove(j) {
			p.startFallback(j, nudge.TargetNotFound, "runtime is no longer registered")
		}
	}
}

// decideFor decides for j, the first of its thread in l that may go now, and acts on the
// verdict. A hold defers j and says how soon to look again (held); any other verdict
// takes j out of the lane: delivered, failed, or handed to the fallback chain.
func (p *Pipeline) decideFor(l *lane, j *job, rt nudge.Runtime, now time.Time) (again time.Duration, held bool) {
	reg := trace.StartRegion(j.traceCtx(), "lane.gate")
	vw := p.view(j, rt, now)
	v := decide(vw)
	p.verdictTaken(j, rt, vw, &v)
	reg.End()
	switch v.kind {
	case hold:
		p.markDeferred(j, v, now)
		return recheckIn(v, now, p.cfg.DeferRecheck), true
	case fail:
		if l.remove(j) {
			j.endTask()
			p.finishFailed(j, v.code, v.why)
		}
	case fallback:
		if l.remove(j) {
			j.endTask()
			p.startFallback(j, v.code, v.why)
		}
	default:
		if l.remove(j) {
			if !j.recorded() {
				j.endTask() // refused by Submit (its create failed): never typed
				break
			}
			p.lanes.delivering.Add(1)
			p.deliver(l, j, rt)
			p.lanes.delivering.Add(-1)
		}
	}
	return 0, false
}

// view gathers what decide reads of j and its runtime now: the gates' answers. A runtime
// that is not up needs none of them.
func (p *Pipeline) view(j *job, rt nudge.Runtime, now time.Time) view {
	t := j.record()
	v := view{windows: p.windows(now), t: t, rt: rt, forced: j.forced.Load(), clocks: j.clocks, gates: p.deps.Gates != nil}
	switch rt.Status {
	case nudge.StatusFailed:
		v.refused = p.refusedKeys(rt)
	case nudge.StatusOffline:
		if st, ok := p.deps.Runtimes.(interface{ Stopped(string) bool }); ok {
			v.stopped = st.Stopped(rt.RuntimeID)
		}
	case nudge.StatusStarting:
		if sd, ok := p.deps.Runtimes.(interface{ StartDeadline(string) time.Time }); ok {
			v.startDeadline = sd.StartDeadline(rt.RuntimeID)
		}
	}
	if !rt.Managed || !live(rt.Status) {
		return v
	}
	if t.ThreadID != "" && t.ScheduleID == "" {
		v.loopBlocked, v.loopWhy = p.gate.loops.blocked(threadKey(t))
	}
	v.rateOK, v.rateUntil = p.rateCheck(t, now)
	v.breaker = p.gate.breakers.view(rt.RuntimeID)
	if g := p.deps.Gates; g != nil {
		v.busy, v.busyUntil, v.busyWhy = g.Collision(rt)
		if in, ok := g.(Intake); ok {
			if id, until, ok := in.Intaking(rt); ok {
				v.intakeID, v.intakeUntil = id, until
			}
		}
		v.readiness = g.Readiness(rt)
		if w, ok := g.(Working); ok {
			v.hasWorking, v.working = true, w.Working(rt)
		}
	}
	v.sync = p.syncView(rt.RuntimeID, t.TriggerID, now)
	prof, _ := p.deps.Runtimes.Profile(rt.Agent)
	v.queuesInput = prof.QueuesInput
	return v
}

// live reports whether a runtime's status lets the gates past the runtime's own state.
func live(s nudge.Status) bool {
	switch s {
	case nudge.StatusFailed, nudge.StatusOffline, nudge.StatusDeregistered, nudge.StatusExited,
		nudge.StatusStarting, nudge.StatusFallbackResume, nudge.StatusSpawnRecovery:
		return false
	}
	return true
}

func (p *Pipeline) windows(now time.Time) windows {
	return windows{now: now, maxDefer: p.cfg.MaxDefer, maxHold: p.cfg.MaxHold}
}

// verdictTaken stores what decide changed of j (its clocks) and does what v asks
// besides: the breaker's probe slot, the end of a sync hold, a collision's report, the
// evidence of an expired hold.
func (p *Pipeline) verdictTaken(j *job, rt nudge.Runtime, vw view, v *verdict) {
	j.clocks = v.clocks
	if v.probe {
		if _, _, _, halfOpen := p.gate.breakers.admit(rt.RuntimeID, j.id(), vw.now); halfOpen {
			p.breakerChanged(rt.RuntimeID, BreakerHalfOpen, time.Time{})
		}
	}
	if v.dropSync {
		p.gate.syncs.drop(rt.RuntimeID, vw.sync.h)
	}
	if v.collision != nil {
		p.collided(j, *v.collision)
	}
	if v.evidence {
		v.why += p.evidence(rt)
	}
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

// typeInline types a new trigger from the request's goroutine when its lane is idle (no
// delivery running, nothing queued): no goroutine hop between the request and the write
// to tmux. It makes the lane's decision and the attempt's first stage on this goroutine
// and leaves the rest of the delivery to the lane's goroutine (lane.cont). It reports
// false, having changed nothing, when the trigger must take the lane's usual path: the
// lane is busy, the trigger needs a look at the pane first (a pane check, or a retry), or
// a gate holds it (the lane's goroutine then decides, as for any queued trigger).
func (p *Pipeline) typeInline(j *job) bool {
	if !p.enter() { // Close waits for a typing in flight on a request's goroutine too
		return false
	}
	defer p.wg.Done()
	l := p.laneFor(j.t.RuntimeID)
	if p.lanes.delivering.Load() > 0 || !l.turn.TryLock() {
		return false
	}
	defer func() {
		l.turn.Unlock()
		l.kick() // the rest of the delivery, or the next decision, is the lane's
	}()
	if l.cont.j != nil || l.depth() > 0 || j.maybeTyped || j.record().Attempts > 0 ||
		needsPaneCheck(&l.paneWatch, false, 0, p.deps.Gates != nil, j.envelope) {
		return false
	}
	if !j.recorded() {
		return true // refused by Submit: nothing is typed (and nothing queued)
	}
	rt, ok := p.deps.Runtimes.Get(l.id)
	if !ok {
		return false
	}
	reg := trace.StartRegion(j.traceCtx(), "lane.gate")
	vw := p.view(j, rt, p.cfg.Now())
	v := decide(vw)
	if v.kind == proceed {
		p.verdictTaken(j, rt, vw, &v)
	}
	reg.End()
	if v.kind != proceed {
		return false
	}
	trace.Log(j.traceCtx(), "lane", "inline")
	p.lanes.delivering.Add(1)
	conn, err := p.deps.Conn(rt.WorkspaceID)
	if err != nil {
		p.apply(l, j, rt, outcome{kind: oConnDown, err: err})
		p.lanes.delivering.Add(-1)
		return true
	}
	o := runAttempt(p.ctx, conn, p.newAttempt(l, j, rt))
	if o.kind == oTyped {
		// Typed from the request's goroutine: the lane's goroutine does the rest (the
		// record of the typing, the echo wait, Enter, the confirmation) and ends the
		// delivery's count.
		l.cont = typed{j: j, rt: rt, conn: conn, o: o}
		return true
	}
	p.carry(l, j, rt, conn, o)
	p.lanes.delivering.Add(-1)
	return true
}

// deliver delivers j, taken out of lane l, into runtime rt's pane: an attempt, its
// outcome judged and applied, and its Enter stage after the typing.
func (p *Pipeline) deliver(l *lane, j *job, rt nudge.Runtime) {
	conn, err := p.deps.Conn(rt.WorkspaceID)
	if err != nil {
		p.apply(l, j, rt, outcome{kind: oConnDown, err: err})
		return
	}
	p.carry(l, j, rt, conn, p.attemptServing(l, conn, p.newAttempt(l, j, rt)))
}

// carry applies an attempt's outcome o and runs the attempt's next stage, for as long as
// the step says to go on.
func (p *Pipeline) carry(l *lane, j *job, rt nudge.Runtime, conn Sender, o outcome) {
	for p.apply(l, j, rt, o) {
		o = p.attemptServing(l, conn, o.next)
	}
}

// attemptServing runs attempt a (runAttempt) on a goroutine of its own while the lane's
// goroutine applies the ends of its other jobs posted meanwhile (drainEnds): an attempt
// waits seconds for an echo, an Enter's effect and the agent's record, and an ack
// recorded then (Pipeline.Ack waits at most APIAckWait for it) must not wait behind it.
// The attempt changes no job: it only returns its outcome.
func (p *Pipeline) attemptServing(l *lane, conn Sender, a attempt) outcome {
	res := make(chan outcome, 1)
	p.goOwned(func() { res <- runAttempt(p.ctx, conn, a) })
	for {
		select {
		case o := <-res:
			return o
		case <-l.endc:
			p.drainEnds(l)
		}
	}
}

// newAttempt is the attempt the lane hands to runAttempt for j.
func (p *Pipeline) newAttempt(l *lane, j *job, rt nudge.Runtime) attempt {
	t := j.record()
	target := paneTarget(rt)
	prof, ok := p.deps.Runtimes.Profile(rt.Agent)
	return attempt{
		env: &p.env, pane: &l.paneWatch, tctx: j.traceCtx(),
		t: t, rt: rt, prof: prof, profOK: ok, target: target, envelope: j.envelope,
		received: j.received, detail: newDetail(t, target, p.deps.Gates != nil),
		maybeTyped: j.maybeTyped, keysOnly: j.keysOnly, typedBusy: j.clocks.typedBusy,
		submitSeq: j.clocks.submitSeq, unshownSince: j.clocks.unshownSince,
	}
}

// needsPaneCheck says whether to ask tmux about the pane before typing. It may be skipped
// only on the hot path's best case: the lane's last delivery was confirmed (nothing of
// ours is left in the input line), nothing may have been typed for this trigger before,
// the detectors watch for copy mode and pane death, and the text goes by send-keys (a
// paste into a dead pane crashes tmux 3.3a, so a paste is always preceded by the check).
func needsPaneCheck(w *paneWatch, maybeTyped bool, attempts int, gates bool, envelope string) bool {
	return !w.clean.Load() || maybeTyped || attempts > 0 || !gates || NeedsPaste(envelope)
}

// jobView is what next reads of j (on runtime rt) now.
func (p *Pipeline) jobView(j *job, rt nudge.Runtime) jobView {
	ackNow := p.deps.Acks == nil
	if !ackNow {
		prof, _ := p.deps.Runtimes.Profile(rt.Agent)
		ackNow = prof.SubmittedIsAck
	}
	return jobView{
		windows: p.windows(p.cfg.Now()), recheck: p.cfg.DeferRecheck, retries: p.cfg.AckRetries, backoff: p.cfg.Backoff,
		t: j.record(), clocks: j.clocks, host: rt.Host, closing: p.ctx.Err() != nil, ackNow: ackNow,
	}
}

// apply judges outcome o of j's attempt in lane l (next) and applies the step. It reports
// whether the attempt goes on with its next stage (o.next).
func (p *Pipeline) apply(l *lane, j *job, rt nudge.Runtime, o outcome) (goOn bool) {
	st := next(p.jobView(j, rt), o)
	j.clocks = st.clocks
	if st.turn {
		p.takeTurn(j)
	}
	if st.retyped {
		j.endTask()
	}
	if st.timed {
		j.received = time.Time{}
	}
	if st.maybeTyped {
		j.maybeTyped = true
	}
	if st.collision != nil {
		p.collided(j, *st.collision)
	}
	d := o.detail
	switch st.kind {
	case sGoOn:
		p.markInjected(j, d, st.newAttempt, st.backend)
		return true
	case sSubmitted:
		if st.inject {
			p.markInjected(j, d, st.newAttempt, st.backend)
		}
		if st.queued {
			j.update(p.cfg.Now(), func(t *nudge.Trigger) { t.QueuedInAgent = true })
		}
		p.markSubmitted(j, d, st.note, st.ackNow)
	case sAcked:
		p.finishAcked(j, st.signal)
	case sFailed:
		p.finishFailed(j, st.code, st.why)
	case sFallback:
		p.startFallback(j, st.code, st.why)
	case sKeysRefused:
		p.keysRefused(j, st.err)
	case sDefer:
		if st.connWaits {
			p.log.Debug("control connection down: trigger waits", "trigger_id", j.id(), "err", st.err)
		}
		if st.hold.kind == hold {
			p.markDeferred(j, st.hold, p.cfg.Now())
		}
		j.markDecided() // answered as it stands (queued, deferred, or injected)
		if l == nil {
			l = p.laneFor(j.record().RuntimeID)
		}
		l.push(j, true)
	case sYield:
		if !p.yieldTo(l, j, st.pending) {
			return p.apply(l, j, rt, outcome{kind: oPaneHeld, v: verdict{kind: hold, code: nudge.InputLineBusy,
				why: "the input line holds trigger " + st.pending + "'s prompt, never entered"}})
		}
	case sAckWait:
		p.ackWaitAgain(j)
	case sRetry:
		p.retry(j, st.wait)
	}
	return false
}

// yieldTo puts the in-flight trigger id at the front of l, ahead of j, and reports
// whether it could: its envelope waits unentered at the cursor, and it needs only Enter.
func (p *Pipeline) yieldTo(l *lane, j *job, id string) bool {
	pj := p.inflight(id)
	if pj == nil || !l.remove(pj) { // only a trigger waiting in this lane, not one in an ack wait or a fallback
		return false
	}
	pj.maybeTyped, pj.clocks.retryAt = true, time.Time{}
	l.push(j, true)
	l.push(pj, true)
	return true
}

// takeTurn counts the delivery for the rate limiter and the loop guard.
func (p *Pipeline) takeTurn(j *job) {
	t := j.record()
	key, now := threadKey(t), p.cfg.Now()
	p.gate.rate.take(key, now)
	p.gate.perRT.take(runtimeKey(t), now)
	if t.ThreadID != "" && t.ScheduleID == "" && t.Attempts == 0 {
		if tripped, why := p.gate.loops.turn(key, t.Prompt); tripped {
			p.log.Warn("thread auto-blocked", "thread_id", t.ThreadID, "agent_id", t.Agent, "why", why)
		}
	}
}

// intakePoll is how often a trigger held behind another's intake looks again: the agent's
// first drawing ends the intake without waking the lane.
const intakePoll = 100 * time.Millisecond

// rateCheck applies both rate limits: the thread's (RateLimit), and the runtime's over
// all its threads (RuntimeRate), so no count of thread ids, and neither name of the
// agent, buys a runtime more triggers. Refused, it says when both let one through.
func (p *Pipeline) rateCheck(t nudge.Trigger, now time.Time) (bool, time.Time) {
	okThread, untilThread := p.gate.rate.check(threadKey(t), now)
	okRT, untilRT := p.gate.perRT.check(runtimeKey(t), now)
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
func (p *Pipeline) agentKey(workspace, agent string) string {
	if rt, ok := p.deps.Runtimes.Lookup(workspace, agent); ok {
		return rt.WorkspaceID + "/" + rt.Role
	}
	return workspace + "/" + agent
}
