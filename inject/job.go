package inject

import (
	"context"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nudgehq/nudge"
)

// job is a trigger in flight. Its record is the freshest copy of the receipt; the store
// copy follows it (persist).
type job struct {
	mu            sync.Mutex
	t             nudge.Trigger
	envelope      string        // sanitized prompt wrapped in its envelope: what is typed
	created       chan struct{} // closed once the create commit is done (or failed: lost)
	lost          bool          // the record was never committed: nothing may be persisted, nothing typed
	keepIntake    bool          // acked by the agent's record: the intake gate ends on its own
	decided       chan struct{} // closed at the first decision: typed, parked or failed
	decideOnce    sync.Once
	pmu           sync.Mutex // serializes persist
	outcomeLogged bool       // its final outcome was logged at info (under pmu)
	maybeTyped    bool       // an earlier incarnation may have typed it: look before typing
	keysOnly      bool       // withdrawn from the agent's channel (or it failed): typed from now on
	counted       bool       // its live failure was counted by the runtime's breaker
	received      time.Time  // when its request came in (zero once its first typing is timed)

	// clocks are its holds' clocks and the marks its steps leave (decide's and next's),
	// changed only as the lane applies a verdict or a step.
	clocks jobClocks

	// cause is the code and message that sent it to its fallback (read and written under
	// mu, inside update): a live delivery into the runtime the fallback started keeps
	// them on the receipt, so it still says why the prompt went there.
	cause struct {
		code nudge.Code
		why  string
	}

	// forced is set by an operator's Force (admin): the trigger goes past the rate limit
	// and a dialog too. A force_override asked with the trigger itself does not (gates).
	forced atomic.Bool

	tctx context.Context // the request's trace task (only while an execution trace runs)
	task *trace.Task     // ended once the trigger is typed (or leaves the lane otherwise)
}

// traceCtx is the context for the job's trace regions.
func (j *job) traceCtx() context.Context {
	if j.tctx != nil {
		return j.tctx
	}
	return context.Background()
}

// endTask ends the job's trace task; idempotent.
func (j *job) endTask() {
	j.mu.Lock()
	task := j.task
	j.task = nil
	j.mu.Unlock()
	if task != nil {
		task.End()
	}
}

func newJob(t nudge.Trigger, recovered bool) *job {
	return &job{t: t, created: make(chan struct{}), decided: make(chan struct{}), maybeTyped: recovered}
}

// markDecided says that the lane made its first decision on j: typed, parked or failed.
func (j *job) markDecided() { j.decideOnce.Do(func() { close(j.decided) }) }

func (j *job) record() nudge.Trigger {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.t
}

func (j *job) id() string { return j.t.TriggerID } // immutable

// update applies fn to the in-memory record and returns a copy.
func (j *job) update(now time.Time, fn func(*nudge.Trigger)) nudge.Trigger {
	j.mu.Lock()
	defer j.mu.Unlock()
	fn(&j.t)
	j.t.UpdatedAt = now
	return j.t
}

func tp(t time.Time) *time.Time { return &t }

// jobClocks are a job's hold clocks and the marks its steps leave: the gates' (decide)
// and the attempt's and ack wait's (next).
type jobClocks struct {
	holdStart  time.Time // when the current agent or runtime hold began (busy, confirming, paused, ...)
	deferStart time.Time // when the current collision deferral began
	collided   bool      // its collision event went out for the current deferral (operatorHold)
	typedBusy  bool      // the readiness gate last saw the agent at work on its screen (it let it through: the agent queues input)
	paneHold   time.Time // when the pane check began holding it (copy mode, a pending envelope)
	connWait   time.Time // when it began waiting for a control connection (connStep)
	retryAt    time.Time // a retry or a hold waits until then

	// A TUI took its last typing out of the composer at output count submitSeq (0: not
	// confirmed so, or typed again since); unshownSince is when a retry began waiting for
	// the pane to draw anything after that (unshown).
	submitSeq    uint64
	unshownSince time.Time
	ackFrom      time.Time // the ack wait counts from then, not from the submit (zero: the submit)
}

// ResultFor is the seed's result word for a receipt (docs/orchestrators.md, "Receipts"): queued, injected
// and submitted are pending, deferred is deferred, acked is delivered (also when a
// fallback nudge ran itself took it there: the receipt's fallback and delivery_backend
// name that fallback, and error_code keeps the live path's ACK_TIMEOUT or DEFER_TIMEOUT;
// a fallback launch closed at submitted counts as acked), failed is failed or timeout; a
// final word once set stays. already_active is the answer to a repeated trigger_id while
// the first is in flight.
func ResultFor(t nudge.Trigger) nudge.Result { return resultFor(&t) }

// resultFor derives the seed's result word from a receipt. delivered means acknowledged
// (seed 000 §9.1): a prompt the agent took but has not acked yet is still pending, unless
// the trigger is closed there (a fallback launch that cannot ack). timeout is kept for a
// prompt that reached no agent: seed 000 §9.2 has an orchestrator run its own resume on
// timeout, which after nudge's own fallback would give the agent the prompt twice. A
// final word (delivered, timeout, failed) once set is kept: the result moves only
// forward, so a retry never turns a receipt back to pending and no trigger counts in two
// outcomes.
func resultFor(t *nudge.Trigger) nudge.Result {
	if finalResult(t.Result) {
		return t.Result
	}
	timedOut := t.ErrorCode == nudge.AckTimeout || t.ErrorCode == nudge.DeferTimeout
	switch t.State {
	case nudge.StateAcked:
		return nudge.ResultDelivered
	case nudge.StateSubmitted:
		if t.Closed {
			return nudge.ResultDelivered
		}
		return nudge.ResultPending // taken, not acknowledged yet
	case nudge.StateDeferred:
		return nudge.ResultDeferred
	case nudge.StateFailed:
		if timedOut {
			return nudge.ResultTimeout
		}
		return nudge.ResultFailed
	default:
		return nudge.ResultPending // queued or injected: no outcome yet
	}
}

// finalResult reports whether r is an outcome (delivered, timeout, failed), not a state
// on the way.
func finalResult(r nudge.Result) bool {
	return r == nudge.ResultDelivered || r == nudge.ResultTimeout || r == nudge.ResultFailed
}

// recorded waits for the job's create and reports whether it was written. A job whose
// record was not written (a full disk) is refused by Submit and is never typed: the
// caller sends it again, and it must not be given twice.
func (j *job) recorded() bool {
	<-j.created
	return !j.lost
}
