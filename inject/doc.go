// Package inject is the trigger pipeline: it accepts trigger requests, passes each
// through the gates, types it into its runtime's pane over the workspace's control
// connection, confirms that the agent took it, and drives it to a final receipt
// (queued → deferred → injected → submitted → acked, or failed with a code, or handed
// to the fallback chain).
//
// The main types:
//
//	Pipeline   New, Open (resumes the store's open triggers), Close; Submit and
//	           SubmitAsync accept a trigger, Get reads its receipt, Wait blocks until
//	           a receipt meets a condition, Ack is the one decision for an explicit
//	           ack, Force delivers a held trigger now; Kick, Observe, Progress and
//	           Unblock are how the detector, the registry and the API nudge it;
//	           HoldForSync and ReleaseSync hold a worker for its orchestrator's sync
//	Collision  the collision event of a trigger held for a person past the max defer
//	           window (nudge.Collision; published as nudge.CollisionHeld)
//	Config     the trigger policy (DefaultConfig: the seed defaults; Validate)
//	Deps       its collaborators, as interfaces it declares: Runtimes (*panes.Registry),
//	           Sender (*controlmode.Conn), Gates, InputLine and HumanSync
//	           (*detector.Monitor), Acker (*ack.Tracker), Fallbacker (*ack.Chain), the
//	           Store (*store.DB: its write-behind queue and the parts it hands out) and
//	           the Bus
//	Request    one trigger request; Submitted, Submit's answer
//	Scheduler  periodic prompts (seed 004) turned into triggers: Add, Remove, Close
//
// Inside, the Pipeline is the one owner of the pipeline's state, and no part of it holds
// a pointer to another:
//
//	ledger    the Config and Deps (read-only after New), the context and WaitGroup of
//	          every goroutine, and the triggers in flight (jobs by id, under its mu) with
//	          the writes of their receipts (persist, audit, markDeferred; receipt.go:
//	          markInjected, markSubmitted)
//	lanes     a lane per runtime (lane.go): its queue, and its paneWatch (pane.go: the
//	          pane's output activity, cursor row and whether the last delivery was
//	          confirmed), which it lends to each attempt
//	gate      the rate limiters, the loop guard, the circuit breakers and the sync holds,
//	          each under its own lock
//	fb        the fallback bookkeeping (relaunching, spawned aside, launched in a pane,
//	          refused keys), under its mu (finish.go, aside.go, refused.go)
//
// A lane's goroutine takes each trigger through three steps and applies each one's
// answer itself (flow.go):
//
//	decide      view -> verdict, pure (decide.go): the gates in order over what the lane
//	            gathered of them (Pipeline.view); the verdict carries the job's hold
//	            clocks and the few effects it asks (a breaker's probe slot, a sync hold
//	            ended, a collision to report, the pane's last lines for an expired hold)
//	runAttempt  (ctx, Sender, attempt) -> outcome (attempt.go, enter.go): the look at the
//	            pane, the look for an earlier typing, the agent's channel or the guarded
//	            typing, then (its second stage, after the lane recorded the typing) the
//	            echo wait, Enter and its repair, and the confirmation; an attempt is a
//	            value made by the lane (newAttempt) and knows nothing of the lane, the
//	            ledger or the fallback chain
//	next        (job, outcome) -> step, pure (next.go): go on to Enter, submitted and the
//	            ack wait, a hold and a retry at the lane's front, a yield to a trigger
//	            whose envelope waits at the cursor, the fallback chain, or a close; an ack
//	            wait's end (acked, or oAckTimeout: a retry or the fallback) is judged the
//	            same way
//
// Pipeline.apply applies a step: the store and the audit, the lane's queue, the ack wait,
// the fallback chain (startFallback, runFallback) and the closing of a receipt
// (finishAcked, finishFailed). The lane's goroutine is the one code that changes its
// jobs, from their first decision to their close: an ack wait and a fallback chain run
// on goroutines of their own, read what they need (the agent's record, the chain's
// launches) and post their end to the lane (lane.go: post), whose goroutine applies it
// (drainEnds) before its next decision, while it waits, and while an attempt runs on a
// goroutine of its own (attemptServing): an ack recorded while the lane delivers another
// trigger does not wait behind that delivery (Pipeline.Ack waits at most APIAckWait).
//
// The pure, hot-path text pieces, fuzzed in package fuzz, none allocating more than
// its result:
//
//	Sanitize      prompt text -> safe text (no control characters but LF, size-limited)
//	Envelope      the [BRIDGE_TRIGGER …] wrapper that reaches the agent as one message
//	              (Wrap, Field: values in the id charset, nudge.IsIDByte)
//	TypeCommands  the tmux control-mode command lines that type the text into a pane
//	EnterCommand  the separate Enter key
//
// # Flow
//
// Submit validates the request, writes the new trigger to the store's create log (safe
// against kill -9 before it returns; the bbolt commit follows, write-behind) and puts
// it in its runtime's lane (a trigger for an unknown or unmanaged runtime goes to the
// fallback chain). A lane is one runtime's queue: it takes the first trigger that may
// go (forced ones first, order kept within a thread) and decides on it: runtime alive,
// loop guard, force, circuit breaker, pause, rate limit, human collision (collision.go),
// an orchestrator's sync (synchold.go), readiness. The verdict (a verdictKind: proceed,
// hold, fail, fallback, waitConn) either delivers it, defers it with a code and a
// deadline (hold.go lists every hold and its end), fails it, or starts the fallback
// chain. The rate limit and the loop guard count per runtime, never per the name (role
// or agent_id) a caller gives the agent: a thread of it has its budget
// (Config.RateLimit), and the runtime one over all its threads (Config.RuntimeRate), so
// new thread ids buy no more triggers. An attempt looks in the pane first when an
// earlier attempt may have typed the envelope (never typing a prompt twice), types it,
// waits for its echo, presses Enter and checks that it left the composer; then the
// trigger waits for its ack (Acker), with retries and, when they are spent, the
// fallback chain. Later receipt states are written behind; an ack is flushed at once.
// Every change wakes Wait's waiters and is published (nudge.TriggerChanged).
//
// Followed from the API to tmux, a trigger goes one way: Submit, route, typeInline (an
// idle lane, on the request's goroutine) or enqueue and runLane, stepLane, decideFor
// (view, decide), deliver (newAttempt, runAttempt: lookAndType, typeInto, typeEnvelope,
// Sender.DoAll), then carry (apply, next, markInjected) and runAttempt's Enter stage
// (submit, pressEnter, enter, Sender.Do), apply (next, markSubmitted), goAwaitAck.
//
// # The bus
//
// From Open to Close the Pipeline reads the daemon's bus (news.go): pane output, a direct
// call (PaneOutput: Observe); on one subscriber, in the order published, what lets a held
// trigger go (nudge.ReadinessChanged READY and not operator_busy, RuntimeChanged ready,
// OperatorQuiet: Kick) and a human's intervention (nudge.HumanDone: the orchestrator's
// sync, held before the OperatorQuiet that follows it kicks the lane; the Gates hold the
// pane until then: HumanSync); on another, the replies read in the agents' records
// (nudge.ReplyRead: Reply) and spawns' first prompts (nudge.FirstPrompt: submitted as
// triggers). It publishes nudge.TriggerChanged (with the ReplyRead it recorded, for the
// event stream's reply event), CollisionHeld and TriggerTyped.
//
// # Goroutines
//
// The Pipeline owns every goroutine it starts: each is counted in its one WaitGroup and
// stopped through its one context, and Close cancels and waits for all of them. It runs
// one goroutine per lane (runLane, started on the lane's first trigger), a timer per
// open circuit breaker (to wake its lane when the cooldown ends), one per trigger
// waiting for its ack (goAwaitAck), one per running fallback chain (runFallback), one
// per stage of an attempt a lane's goroutine runs (attemptServing), a short one per
// closed trigger that forgets it once its last write is in the store, one
// per runtime spawned aside that waits for its prompts to be done (collectAside), one
// per SubmitAsync, one per reply recorded on a trigger in flight, and its two bus
// subscribers (nudge.Client; closed first in Close, after the events they hold). A lane's
// goroutine makes its decisions and its attempts; a request's goroutine makes them
// instead for an inline typing into an idle lane while no other delivery is in
// progress (typeInline, under the lane's turn; Close waits for it too), and leaves the
// typing's outcome to the lane's goroutine (lane.cont). The lane's goroutine runs each
// stage of an attempt on a short goroutine of its own (attemptServing) and applies the
// ends posted meanwhile; an attempt starts only a short wait for an ack while it
// confirms a submit. The ack wait's and the fallback chain's goroutines post their ends
// (the ack, the timeout's retry or fallback, the chain's close or its live delivery in a
// lane) to the job's lane instead of applying them; an end posted once Close has begun
// may not be applied, and the trigger, open in the store, is resumed by the next Open.
// Submit also runs the store create beside the lane's first decision and joins it
// before returning. The Scheduler owns one goroutine of its own,
// started by NewScheduler and stopped and joined by its Close (the daemon closes it
// before the pipeline, into which it submits).
//
// Observe runs on a control connection's read goroutine and neither blocks nor
// allocates; Kick and Publish never block either.
package inject
