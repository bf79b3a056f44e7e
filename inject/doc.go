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
//	           (*detector.Monitor), Acker (*ack.Tracker), Fallbacker (*ack.Chain),
//	           the store and the Bus
//	Request    one trigger request; Submitted, Submit's answer
//	Scheduler  periodic prompts (seed 004) turned into triggers: Add, Remove, Close
//
// Inside, the Pipeline is a façade over parts that each own their state and lock:
//
//	core      shared by all: the Config and Deps (read-only after New), the context and
//	          WaitGroup of every goroutine, and the ledger of triggers in flight (jobs
//	          by id, under its mu) with the writes of their receipts (persist, audit)
//	lanes     order, gates and holds: a lane per runtime (under its mu), the rate
//	          limiter, the loop guard and the circuit breakers (each under its own lock)
//	typist    the pane check, guarded typing of the envelope, echo wait, Enter and its
//	          repair, and the check that the prompt left the composer (no state of its
//	          own: the pane's on the lane, the trigger's on its job)
//	finisher  the ack wait, retries, the fallback chain and the closing of a receipt;
//	          it owns the fallback bookkeeping (relaunching, spawned aside, launched in
//	          a pane), under its mu, the collection of the runtimes it spawned aside
//	          once their prompts are done (aside.go), and the runtimes failed because
//	          their tmux refused send-keys (refused.go)
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
// go (forced ones first, order kept within a thread) and asks the gates in order — runtime alive, loop guard, force, circuit breaker, pause, rate limit, human
// collision (collision.go), an orchestrator's sync (synchold.go), readiness — whose verdict (a verdictKind: proceed, hold, fail, fallback,
// waitConn) either delivers it, defers it with a code and a deadline (hold.go lists
// every hold and its end), fails it, or starts the fallback chain. The rate limit and
// the loop guard count per runtime, never per the name (role or agent_id) a caller gives
// the agent: a thread of it has its budget (Config.RateLimit), and the runtime one over
// all its threads (Config.RuntimeRate), so new thread ids buy no more triggers. Delivery (the typist)
// looks in the pane first when an earlier attempt may have typed the envelope (never
// typing a prompt twice), types it, waits for its echo, presses Enter and checks that it
// left the composer; then the finisher waits for its ack (Acker), with retries and, when
// they are spent, the fallback chain. Later receipt states are written behind; an ack is flushed
// at once. Every change wakes Wait's waiters and is published (nudge.TriggerChanged).
//
// # The bus
//
// From Open to Close the Pipeline reads the daemon's bus (news.go): pane output, a direct
// call (PaneOutput: Observe); on one subscriber, in the order published, what lets a held
// trigger go (nudge.ReadinessChanged READY and not operator_busy, RuntimeChanged ready,
// OperatorQuiet: Kick) and a human's intervention (nudge.HumanDone: the orchestrator's
// sync, held before the OperatorQuiet that follows it kicks the lane); on another, the
// replies read in the agents' records (nudge.ReplyRead: Reply) and spawns' first prompts
// (nudge.FirstPrompt: submitted as triggers). It publishes nudge.TriggerChanged (with the
// ReplyRead it recorded, for the event stream's reply event), CollisionHeld and
// TriggerTyped.
//
// # Goroutines
//
// The Pipeline owns every goroutine its parts start: each is counted in the core's one
// WaitGroup and stopped through its one context, and the Pipeline's Close cancels and
// waits for all of them (no part has a Close of its own). The lanes run one goroutine
// per runtime (runLane, started on its first trigger) and a timer per open circuit
// breaker (to wake its lane when the cooldown ends); the finisher one per trigger
// waiting for its ack (awaitAck), one per running fallback chain (runFallback), a
// short one per closed trigger that forgets it once its last write is in the store, and
// one per runtime spawned aside that waits for its prompts to be done (collectAside); the
// Pipeline one per SubmitAsync, one per reply recorded on a trigger in flight, and its
// two bus subscribers (nudge.Client; closed first in Close, after the events they hold). The
// typist runs on a lane's goroutine, or on a request's for an inline typing into an idle
// lane while no other delivery is in progress (Close waits for that too), and starts
// only a short wait for an ack while it confirms a submit. Submit also runs the store
// create beside the lane's first decision and joins it before returning. The Scheduler owns one goroutine of its own, started by
// NewScheduler and stopped and joined by its Close (the daemon closes it before the
// pipeline, into which it submits).
//
// Observe runs on a control connection's read goroutine and neither blocks nor
// allocates; Kick and Publish never block either.
package inject
