package inject

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
)

// core is what every part of the pipeline shares: the policy and collaborators (read-only
// after New), the context and WaitGroup of every goroutine the pipeline starts (Close
// cancels the one and joins the other), and the ledger of triggers in flight: their jobs
// by id (under mu) and the writes of their receipts (persist, changed, audit,
// markDeferred), which every part makes and Wait's waiters hear of.
type core struct {
	cfg    Config
	deps   Deps
	log    hclog.Logger
	ctx    context.Context // ends on Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the pipeline starts
	opened time.Time

	mu      sync.Mutex
	jobs    map[string]*job // triggers not yet closed, by id
	closed  bool            // Close has begun: no lane, SubmitAsync or inline typing starts
	waiters watchers        // Wait's: woken by changed

	news news // the pipeline's subscriptions (news.go)
}

// enter counts the calling goroutine in the pipeline's WaitGroup (Close then waits for
// it) unless Close has begun; the caller ends with c.wg.Done() if it reports true.
func (c *core) enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	return true
}

// goIfOpen runs fn on a goroutine the pipeline owns, unless Close has begun.
func (c *core) goIfOpen(fn func()) bool {
	if !c.enter() {
		return false
	}
	go func() {
		defer c.wg.Done()
		fn()
	}()
	return true
}

// goOwned runs fn on a goroutine the pipeline owns (from one it owns already, or before
// Close: Close waits for it).
func (c *core) goOwned(fn func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		fn()
	}()
}

// forget drops j from the jobs in flight (if it is still the one under its id).
func (c *core) forget(j *job) {
	c.mu.Lock()
	if c.jobs[j.id()] == j {
		delete(c.jobs, j.id())
	}
	c.mu.Unlock()
}

// persist queues the job's current record (and audit records) for the store once the
// record exists. Only the create is durable before the API answers; later receipt states
// are write-behind (in order, many per fsync): a crash can lose the latest of them, and
// recovery then looks in the pane before typing anything again. Writes are serialized
// per job so the store never goes back to an older copy.
func (c *core) persist(j *job, recs ...nudge.AuditRecord) { c.persistReply(j, nil, recs...) }

// persistReply is persist for the change that records reply r on j's receipt (nil: any
// other change): its TriggerChanged carries r.
func (c *core) persistReply(j *job, r *nudge.ReplyRead, recs ...nudge.AuditRecord) {
	<-j.created
	if j.lost {
		return
	}
	j.pmu.Lock()
	defer j.pmu.Unlock()
	rec := j.record()
	c.deps.Store.PutTriggerLater(rec, recs...) // of several in one batch, only the last record is written
	if rec.Closed && !j.outcomeLogged {
		j.outcomeLogged = true
		c.logOutcome(rec)
	}
	c.changedReply(rec, r)
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
func (c *core) logOutcome(t nudge.Trigger) {
	c.log.Info("trigger outcome", logFields(t)...)
}

func (c *core) changed(t nudge.Trigger) { c.changedReply(t, nil) }

// changedReply wakes t's waiters and publishes its change (with r, the reply it recorded).
func (c *core) changedReply(t nudge.Trigger, r *nudge.ReplyRead) {
	c.log.Debug("trigger", logFields(t)...)
	c.waiters.notify(t.TriggerID)
	nudge.Publish(c.deps.Bus, nudge.TriggerChanged{Trigger: t, Reply: r})
}

func (c *core) audit(event string, t nudge.Trigger, reason string) nudge.AuditRecord {
	return nudge.AuditRecord{
		Event: event, TriggerID: t.TriggerID, ThreadID: t.ThreadID, RuntimeID: t.RuntimeID,
		Workspace: t.WorkspaceID, Subject: t.Caller, PeerUID: uidPtr(t.CallerUID),
		Reason: reason, Code: t.ErrorCode,
	}
}

func (c *core) auditDetail(event string, t nudge.Trigger, reason string, detail any) nudge.AuditRecord {
	r := c.audit(event, t, reason)
	r.Detail = mustJSON(detail)
	return r
}

func (c *core) transition(runtimeID string, to nudge.Status, reason string) {
	if runtimeID == "" {
		return
	}
	if _, err := c.deps.Runtimes.Transition(runtimeID, to, reason); err != nil {
		c.log.Debug("runtime transition", "runtime_id", runtimeID, "to", to, "err", err)
	}
}

// lastTrigger records on the runtime the trigger last delivered to it (seed 001 §5
// last_trigger_id).
func (c *core) lastTrigger(t nudge.Trigger) {
	if t.RuntimeID == "" {
		return
	}
	if _, err := c.deps.Runtimes.Update(t.RuntimeID, func(rt *nudge.Runtime) { rt.LastTriggerID = t.TriggerID }); err != nil {
		c.log.Debug("last trigger id", "runtime_id", t.RuntimeID, "err", err)
	}
}

// claim registers j as in flight; if its id is already in flight, it returns that job.
func (c *core) claim(j *job) (*job, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.jobs[j.id()]; ok {
		return prev, true
	}
	c.jobs[j.id()] = j
	return nil, false
}

func (c *core) inflight(id string) *job {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.jobs[id]
}

// markDeferred records a hold; the store is written only when the reason changes.
func (c *core) markDeferred(j *job, v verdict, now time.Time) {
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
	j.decide()
	if changed {
		c.persist(j, c.audit("trigger_deferred", rec, v.why))
	}
}
