package inject

import (
	"context"
	"errors"
	"fmt"
	"runtime/trace"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// Submitted is Submit's answer: the receipt and whether this request created it.
type Submitted struct {
	Trigger nudge.Trigger
	Created bool // false: the id was known; Trigger is the first request's record
}

// Submit accepts a trigger. It returns once the record is in the store's create log (so a
// kill -9 of the daemon cannot lose it; the bbolt commit follows in the background) and the runtime's lane has made its first decision
// (typed it, deferred it, queued it behind others, or failed it). While any delivery is
// in progress the trigger is queued at once and its answer waits for no typing: an idle
// daemon types it before answering, a busy one does not keep the caller behind its
// backlog. A repeated trigger_id returns the first request's record and never delivers
// twice.
func (p *Pipeline) Submit(ctx context.Context, req Request) (Submitted, error) {
	start := time.Now()
	var task *trace.Task
	if trace.IsEnabled() {
		// One trace task per trigger, ended once it is typed: go tool trace shows its
		// stages (regions) across the request's goroutine and the lane's.
		ctx, task = trace.NewTask(ctx, "trigger")
	}
	reg := trace.StartRegion(ctx, "submit.check")
	handed := false // the job took over the task
	defer func() {
		if !handed {
			reg.End()
			if task != nil {
				task.End()
			}
		}
	}()
	if err := p.checkRequest(&req); err != nil {
		return Submitted{}, err
	}
	text, err := Sanitize(req.Prompt, p.cfg.MaxPrompt)
	if err != nil {
		return Submitted{}, err
	}
	if s, known, err := p.known(req, text); known {
		return s, err
	}
	// A store that cannot write refuses the trigger before any key goes: the typing runs
	// beside the create below, and a trigger typed and then refused would be typed again
	// when the caller sends it again.
	if err := p.deps.Store.Unavailable(); err != nil {
		return Submitted{}, fmt.Errorf("store trigger: create trigger: %w: %v", store.ErrUnavailable, err)
	}
	j, rt, known := p.newJobFor(req, text, start)
	j.tctx, j.task = ctx, task
	reg.End()
	handed = true
	if prev, dup := p.claim(j); dup {
		j.endTask()
		return repeated(prev.record(), req, text)
	}
	// Commit and deliver in parallel: the lane may type before the commit returns, and the
	// answer waits for both. A crash between the two is covered by looking for the id in
	// the pane before typing a request that the store does not know (maybeTyped). The
	// create runs on its own goroutine on purpose: this goroutine then blocks, so the
	// scheduler runs the lane it just woke at once on this P (a trace showed the lane
	// waiting ~90 us p50 behind an inline create), and an idle P takes the create.
	errc := make(chan error, 1)
	go func() {
		defer trace.StartRegion(ctx, "submit.create").End()
		errc <- p.create(j, known)
	}()
	p.route(ctx, j, known && rt.Managed)
	reg = trace.StartRegion(ctx, "submit.wait-create")
	err = <-errc
	reg.End()
	if err != nil {
		p.release(j)
		if errors.Is(err, errExisting) {
			return repeated(j.record(), req, text)
		}
		return Submitted{}, err
	}
	if !known || !rt.Managed {
		p.unroutable(j, known)
	}
	p.awaitDecision(ctx, j)
	return Submitted{Trigger: j.record(), Created: true}, nil
}

// known answers a request whose trigger_id is in flight or in the store (known): with
// the first request's record, never delivering it twice. An id whose trigger aged out of
// the store (its tombstone kept) is refused with IDEMPOTENCY_CONFLICT.
func (p *Pipeline) known(req Request, text string) (s Submitted, known bool, err error) {
	if j := p.inflight(req.TriggerID); j != nil {
		s, err := repeated(j.record(), req, text)
		return s, true, err
	}
	t, err := p.deps.Store.Triggers().GetTrigger(req.TriggerID)
	var aged *store.AgedOutError
	switch {
	case err == nil:
		s, err := repeated(t, req, text) // finished before: never delivered twice
		return s, true, err
	case errors.As(err, &aged):
		// Finished and removed past the retention window: its receipt is gone, but a
		// repeat is still never delivered again while the tombstone is kept.
		return Submitted{}, true, nudge.NewError(nudge.IdempotencyConflict, "trigger_id "+req.TriggerID+
			" was used by a trigger that finished "+aged.Finished.Format(time.RFC3339)+" and aged out of the store "+
			aged.Removed.Format(time.RFC3339)+": pick a new trigger_id")
	case !errors.Is(err, store.ErrNotFound):
		return Submitted{}, true, fmt.Errorf("look up trigger: %w", err)
	}
	return Submitted{}, false, nil
}

// newJobFor makes the job of a new request: its record, routed to the agent's runtime
// if the registry knows it (known), and its envelope. start is when Submit was called.
func (p *Pipeline) newJobFor(req Request, text string, start time.Time) (j *job, rt nudge.Runtime, known bool) {
	t := p.newRecord(req, text)
	rt, known = p.deps.Runtimes.Lookup(req.Workspace, req.Agent)
	if known {
		t.RuntimeID, t.Host = rt.RuntimeID, rt.Host
	}
	j = newJob(t, p.cfg.Now().Sub(p.opened) < p.cfg.RedeliveryCheck)
	j.envelope = p.envelope(t, text)
	j.received = req.Received
	if j.received.IsZero() {
		j.received = start
	}
	return j, rt, known
}

// route starts a new trigger on its way: for a managed runtime, typed at once from this
// goroutine if its lane is idle, else queued on the lane. Any other trigger waits for its
// create (Submit then closes it or starts its fallback chain: unroutable).
func (p *Pipeline) route(ctx context.Context, j *job, managed bool) {
	if !managed {
		j.endTask()
		return
	}
	if !p.typeInline(j) {
		trace.Log(ctx, "lane", "enqueue")
		p.enqueue(j)
	}
}

// awaitDecision waits, at most decideWait, for the lane's first decision on j (typed,
// deferred, queued behind others, or failed). The record is safe already; a receipt
// not decided yet follows on /v1/events and GET.
func (p *Pipeline) awaitDecision(ctx context.Context, j *job) {
	timer := time.NewTimer(decideWait)
	defer timer.Stop()
	defer trace.StartRegion(ctx, "submit.wait-decision").End()
	select {
	case <-j.decided:
	case <-timer.C:
	case <-ctx.Done():
	}
}

// SubmitAsync submits req on a goroutine the pipeline owns (Close cancels and joins it),
// for a trigger nudge sends itself from a goroutine that must not block: the
// orchestrator's sync trigger after a human intervened. done, if not nil, gets Submit's
// result on that goroutine. Once the pipeline is closed SubmitAsync reports false and
// does not call done.
func (p *Pipeline) SubmitAsync(req Request, done func(Submitted, error)) bool {
	return p.goIfOpen(func() {
		res, err := p.Submit(p.ctx, req)
		if done != nil {
			done(res, err)
		}
	})
}

// Get returns a trigger's receipt: the in-flight copy if there is one, else the store's.
func (p *Pipeline) Get(id string) (nudge.Trigger, error) {
	if j := p.inflight(id); j != nil {
		return j.record(), nil
	}
	return p.deps.Store.Triggers().GetTrigger(id)
}

func (p *Pipeline) checkRequest(req *Request) error {
	if req.TriggerID == "" {
		req.TriggerID = newTriggerID(p.cfg.Now())
	}
	if err := nudge.CheckID("trigger_id", req.TriggerID); err != nil {
		return err
	}
	if req.Workspace == "" || req.Agent == "" {
		return nudge.NewError(nudge.BadRequest, "workspace and agent are required")
	}
	if req.ThreadID != "" {
		if err := nudge.CheckID("thread_id", req.ThreadID); err != nil {
			return err
		}
	}
	if req.AckTimeoutMS < 0 || req.AckTimeoutMS > MaxAckTimeoutMS {
		return nudge.NewError(nudge.BadRequest, fmt.Sprintf("ack_timeout_ms must be between 1 and %d (24h); 0 or absent means the daemon's ack timeout", MaxAckTimeoutMS))
	}
	if req.ForceOverride && req.Reason == "" {
		return nudge.NewError(nudge.BadRequest, "force_override needs a reason")
	}
	return nil
}

// MaxAckTimeoutMS bounds a trigger's ack_timeout_ms: 24 hours. (A larger value, such as
// the maximum int64, overflowed the wait and timed out at once.)
const MaxAckTimeoutMS = 24 * 60 * 60 * 1000

func (p *Pipeline) newRecord(req Request, text string) nudge.Trigger {
	now := p.cfg.Now()
	return nudge.Trigger{
		TriggerID: req.TriggerID, WorkspaceID: req.Workspace, Agent: req.Agent,
		ThreadID: req.ThreadID, Prompt: text, Reason: req.Reason,
		AckTimeoutMS: req.AckTimeoutMS, ForceOverride: req.ForceOverride,
		OverrideIntent: req.OverrideIntent,
		Caller:         req.Caller, CallerUID: req.CallerUID, ScheduleID: req.ScheduleID,
		State: nudge.StateQueued, Result: nudge.ResultPending, CreatedAt: now, QueuedAt: now, UpdatedAt: now,
	}
}

// create commits the new record with its audit entry. If the store already had the id (a
// request repeated across a daemon restart), the job is dropped and the stored record wins.
func (p *Pipeline) create(j *job, known bool) error {
	t := j.record()
	rec := p.audit("trigger_received", t, t.Reason) // the caller's reason
	got, created, err := p.deps.Store.Triggers().CreateTriggerQuick(t, &rec)
	if err != nil || !created {
		// The lane may already hold the job: it must not wait for a record that will never
		// be written (persist skips a lost job).
		j.lost = true
		close(j.created)
		if err != nil {
			return fmt.Errorf("store trigger: %w", err)
		}
		j.update(p.cfg.Now(), func(r *nudge.Trigger) { *r = got })
		return errExisting
	}
	close(j.created)
	p.changed(t)
	return nil
}

var errExisting = errors.New("trigger exists")

// decideWait bounds how long Submit waits for the lane's first decision on a new trigger.
const decideWait = time.Second

// release forgets a job whose record was not created by this request.
func (p *Pipeline) release(j *job) {
	p.mu.Lock()
	delete(p.jobs, j.id())
	p.mu.Unlock()
	p.removeFromLane(j)
}
