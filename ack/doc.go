// Package ack turns what an agent does into acknowledgements of triggers, and runs the
// fallback chain when the live delivery failed.
//
// The main types:
//
//	Matcher  finds ACK_TRIGGER:<id> in a pane's live output stream, escapes stripped
//	         inline (nudge.Plain), across chunk boundaries, without allocating
//	OnScreen finds the marker as the agent composed it in a pane capture (a TUI that
//	         redraws by diff may never write it as one run of output), never in the
//	         echo of the trigger itself
//	Tracker  collects the ack signals of the triggers that wait for one: the marker
//	         (Feed, Flush), an explicit API ack (APIAck), heartbeats and read-cursor
//	         advances after the delivery (Heartbeat), with a prompt the agent queued
//	         while busy acked only once the agent took it up (Queued, Dequeued). It
//	         implements inject.Acker: Expect, Wait, Forget, OnScreen, APIAck, and
//	         Handed (the pipeline says when a prompt is typed or given). It holds
//	         its Records and decides whose record is followed (watch.go): from Open,
//	         every local runtime with a directory whose profile names a record, from
//	         its program's start (nudge.RuntimeChanged); a prompt seen there acks its
//	         trigger (RecordAck), the reply of the turn that took it is published
//	         (nudge.ReplyRead), a session id is written to the runtime; a record it
//	         cannot read is listed by Degraded
//	Records  follows the agents' session records (package record) and turns them into
//	         facts about triggers: prompts seen, turns open, replies (RecordSink)
//	Chain    the fallback chain (seed 000 §12, seed 001 §7.3): resume the agent's
//	         session (up to ResumeAttempts; skipped without a resume command or
//	         session id, for a stale session, in a crash loop, or while a human or
//	         another launch holds the session), then spawn it fresh with a summary
//	         prompt; beside the pane instead of in it when a human is at it or nudge
//	         does not manage it. It implements
//	         inject.Fallbacker; every step is audited (into an Auditor,
//	         *store.AuditLog) and published (nudge.FallbackStep)
//
// What a runtime writes (its marker, its record, its heartbeats) acks only a trigger
// handed to that runtime: waited for on it (Expect) and typed or given to it (Handed, or
// a record that says so). A line naming another runtime's trigger, or one of its own
// still queued, acks nothing; a record's session id is the one its file named first, taken
// once a prompt of the runtime's own shows the record is its.
//
// The ack decision: a signal only marks the trigger acked in the Tracker (once, if the
// runtime's profile accepts that signal) and wakes Wait; the pipeline's goroutine that
// waits for the ack records it. An explicit ack goes through inject.Pipeline.Ack, which
// asks the Tracker and, for a trigger whose live path ended in a fallback launch,
// records the ack itself.
//
// # Goroutines
//
// The Tracker owns them all: from Open, one reader per followed record (Records.Follow;
// Stop and Close end and join them) and its bus subscriber (runtime changes, emptied
// queues); Close stops both and waits. Tracker.Feed (PaneOutput, on the bus's output
// lane) and Flush run on a control connection's read goroutine: they take one mutex,
// never block on I/O and do not allocate. Tracker.Wait
// blocks its caller (the pipeline's ack-wait goroutine) until the ack or its context's
// end. Chain.Fallback runs on the caller's goroutine (the pipeline's fallback goroutine)
// and ends with its context; Chain.Close is a no-op kept for symmetry.
package ack
