package inject

import (
	"time"

	"github.com/nudgehq/nudge"
)

// The ledger of triggers in flight: their jobs by id (Pipeline.jobs, under mu), the
// goroutines the pipeline owns (its context and WaitGroup), and the writes of their
// receipts (persist, changed, audit, markDeferred), which Wait's waiters hear of.

// enter counts the calling goroutine in the pipeline's WaitGroup (Close then waits for
// it) unless Close has begun; the caller ends with p.wg.Done() if it reports true.
func (p *Pipeline) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	return true
}

// goIfOpen runs fn on a goroutine the pipeline owns, unless Close has begun.
func (p *Pipeline) goIfOpen(fn func()) bool {
	if !p.enter() {
		return false
	}
	go func() {
		defer p.wg.Done()
		fn()
	}()
	return true
}

// goOwned runs fn on a goroutine the pipeline owns (from one it owns already, or before
// Close: Close waits for it).
func (p *Pipeline) goOwned(fn func()) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		fn()
	}()
}

// forget drops j from the jobs in flight (if it is still the one under its id).
func (p *Pipeline) forget(j *job) {
	p.mu.Lock()
	if p.jobs[j.id()] == j {
		delete(p.jobs, j.id())
	}
	p.mu.Unlock()
}

// persist queues the job's current record (and audit records) for the store once the
// record exists. Only the create is durable before the API answers; later receipt states
// are write-behind (in order, many per fsync): a crash can lose the latest of them, and
// recovery then looks in the pane before typing anything again. Writes are serialized
// per job so the store never goes back to an older copy.
func (p *Pipeline) persist(j *job, recs ...nudge.AuditRecord) { p.persistReply(j, nil, recs...) }

// persistReply is persist for the change that records reply r on j's receipt (nil: any
// other change): its TriggerChanged carries r.
func (p *Pipeline) persistReply(j *job, r *nudge.ReplyRead, recs ...nudge.AuditRecord) {
	<-j.created
	if j.lost {
		return
	}
	j.pmu.Lock()
	defer j.pmu.Unlock()
	rec := j.record()
	p.deps.Store.Triggers().PutTriggerLater(rec, recs...) // of several in one batch, only the last record is written
	if rec.Closed && !j.outcomeLogged {
		j.outcomeLogged = true
		p.logOutcome(rec)
	}
	p.changedReply(rec, r)
}

// logFields are seed 000 §16's log fields of a trigger (request_id is its trigger_id:
// the request is known by it).
func logFields(t nudge.Trigger) []any {
	return []any{"request_id", t.TriggerID, "trigger_id", t.TriggerID, "thread_id", t.ThreadID, "agent_id", t.Agent,
		"runtime_id", t.RuntimeID, "state", t.State, "result", t.Result, "error_code", t.ErrorCode,
		"fallback_used", t.Fallback != "", "fallback", t.Fallback}
}

// logOutcome logs a trigger's final outcome at info (seed 000 §16: an operator running
// at the default level sees every trigger's result, not only its failures).
func (p *Pipeline) logOutcome(t nudge.Trigger) {
	p.log.Info("trigger outcome", logFields(t)...)
}

func (p *Pipeline) changed(t nudge.Trigger) { p.changedReply(t, nil) }

// changedReply wakes t's waiters and publishes its change (with r, the reply it recorded).
func (p *Pipeline) changedReply(t nudge.Trigger, r *nudge.ReplyRead) {
	p.log.Debug("trigger", logFields(t)...)
	p.waiters.notify(t.TriggerID)
	nudge.Publish(p.deps.Bus, nudge.TriggerChanged{Trigger: t, Reply: r})
}

func (p *Pipeline) audit(event string, t nudge.Trigger, reason string) nudge.AuditRecord {
	return nudge.AuditRecord{
		Event: event, TriggerID: t.TriggerID, ThreadID: t.ThreadID, RuntimeID: t.RuntimeID,
		Workspace: t.WorkspaceID, Subject: t.Caller, PeerUID: uidPtr(t.CallerUID),
		Reason: reason, Code: t.ErrorCode,
	}
}

func (p *Pipeline) auditDetail(event string, t nudge.Trigger, reason string, detail any) nudge.AuditRecord {
	r := p.audit(event, t, reason)
	r.Detail = mustJSON(detail)
	return r
}

func (p *Pipeline) transition(runtimeID string, to nudge.Status, reason string) {
	if runtimeID == "" {
		return
	}
	if _, err := p.deps.Runtimes.Transition(runtimeID, to, reason); err != nil {
		p.log.Debug("runtime transition", "runtime_id", runtimeID, "to", to, "err", err)
	}
}

// lastTrigger records on the runtime the trigger last delivered to it (seed 001 §5
// last_trigger_id).
func (p *Pipeline) lastTrigger(t nudge.Trigger) {
	if t.RuntimeID == "" {
		return
	}
	if _, err := p.deps.Runtimes.Update(t.RuntimeID, func(rt *nudge.Runtime) { rt.LastTriggerID = t.TriggerID }); err != nil {
		p.log.Debug("last trigger id", "runtime_id", t.RuntimeID, "err", err)
	}
}

// claim registers j as in flight; if its id is already in flight, it returns that job.
func (p *Pipeline) claim(j *job) (*job, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if prev, ok := p.jobs[j.id()]; ok {
		return prev, true
	}
	p.jobs[j.id()] = j
	return nil, false
}

func (p *Pipeline) inflight(id string) *job {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.jobs[id]
}

// markDeferred records a hold; the store is written only when the reason changes.
func (p *Pipeline) markDeferred(j *job, v verdict, now time.Time) {
	prev := j.record()
	changed := prev.State != nudge.StateDeferred || prev.ErrorCode != v.code || prev.Message != v.why
	rec := j.update(now, func(t *nudge.Trigger) {
		if t.State != nudge.StateDeferred {
			t.DeferredAt = tp(now)
		}
		t.State = nudge.StateDeferred
		t.ErrorCode, t.Message = v.code, v.why
		if v.until.IsZero() {
			t.DeferredUntil = nil
		} else {
			t.DeferredUntil = tp(v.until)
		}
		t.Result = resultFor(t)
	})
	j.markDecided()
	if changed {
		p.persist(j, p.audit("trigger_deferred", rec, v.why))
	}
}
