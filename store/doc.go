// Package store is nudge's durable state: one bbolt file (normally
// <state-dir>/nudge.db) behind domain methods. No bbolt type leaves the package.
//
// The main types:
//
//	DB           an open store; Open, Close; safe for concurrent use. It owns the file,
//	             the write-behind queue (Flush, Settle, Unavailable) and the idle
//	             release, and hands out one type per entity, whose methods keep the
//	             records (db.Triggers().GetTrigger(id)):
//	  Triggers   triggers, their attempts and the create log (CreateTrigger,
//	             CreateTriggerQuick, GetTrigger, UpdateTrigger, PutTriggerLater, ...)
//	  Runtimes   runtimes (PutRuntime, PutRuntimeLater, GetRuntime, ListRuntimes, ...)
//	  Events     the event log kept for /v1/events replay (AppendEventsLater,
//	             EventsSince, TrimEventsLater, ReserveEvents, LoseEventsLater, EventLog,
//	             Unavailable)
//	  AuditLog   the hash-chained audit log (AppendAudit, Audit, AuditHead, VerifyAudit)
//	  Gates      per-thread trigger gates (PutGate, PutGateLater, ListGates, ...)
//	  Schedules  schedules (PutSchedule, ListSchedules, DeleteSchedule)
//	  Meta       small daemon state (PutMeta, GetMeta, DeleteMeta)
//	             The entity types share the DB's bbolt handle, clock and queue; Open
//	             sets them up and they have no lifecycle of their own. A consumer
//	             takes the one it uses, through a small interface of its own, rather
//	             than the whole DB.
//	Options      lock timeout, NoSync, clock, consistency-check budget, and the bus
//	             it reports on (LaterFailed, HealthChanged, Idle, RetainStats: news.go)
//	Gate         the durable state of one per-thread trigger gate
//	Event        one entry of the event log; EventLog its state
//	TriggerFilter, AuditFilter  what ListTriggers and Audit select
//	ChainError   where VerifyAudit found the chain broken
//	Retention    what the store keeps (Options.Retain; retain.go): finished triggers past
//	             a window removed in small transactions, a tombstone left for each
//	             (AgedOutError), the audit log sealed into chained segment files
//	             (auditseal.go: AuditArchived, VerifyArchive); RetainStats what a pass did
//	Space        the file's size and free pages; Open compacts a file with much free
//	             space (compact.go, Options.CompactFree)
//
// and the sentinel errors callers branch on (ErrNotFound, ErrLocked, ErrDamaged,
// ErrUnavailable, ...).
//
// The records it persists are the root package's and it defines none of them:
// nudge.Runtime (PutRuntime, GetRuntime, ListRuntimes, ...), nudge.Trigger
// (CreateTrigger is idempotent on TriggerID), nudge.Attempt (AddAttempt, Attempts),
// nudge.AuditRecord, the append-only, hash-chained audit log (AppendAudit, Audit,
// VerifyAudit) and nudge.Schedule; besides them the gates and a small meta bucket
// (PutMeta, GetMeta). They are stored as their JSON, the API's encoding;
// testdata/compat-v1.db, written before the records moved, pins it (TestCompatFile).
//
// Every method is one bbolt transaction, so a trigger and the audit records that
// describe it (CreateTrigger, UpdateTrigger) commit together or not at all. Records are
// JSON and are decoded (copied) before the transaction ends. Only one process can hold
// the file: a second Open fails with ErrLocked after Options.Timeout. Open refuses a
// damaged file (ErrDamaged) after bbolt's page check and a decode of every record.
//
// Two paths write faster than one fsync per call. CreateTriggerQuick writes the new
// trigger to the create log (nudge.db.creates: one write(2), safe against kill -9) and
// commits it behind; Open replays the log. The *Later methods (PutRuntimeLater,
// PutTriggerLater, AppendAuditLater, PutGateLater, ...) queue a write and return:
// one goroutine commits the queue in order, many writes per fsync; Flush waits for
// what was queued before it. While commits fail (a full disk) the queue is kept and
// retried with backoff and Unavailable reports why. Of several whole-record writes of
// one record in one batch (PutTriggerLater, PutRuntimeLater, PutGateLater) only the last
// is written.
//
// # Goroutines
//
// The DB owns three, all joined by Close: the retention loop (started by Open when
// Options.Retain.Window is set; Close ends it between two transactions and waits), the
// write-behind goroutine (started when a write is queued, ended when the queue is empty;
// Close flushes, cuts its waits short and waits for it) and, for a store whose
// consistency check outlives Options.CheckTimeout, the check that goes on in the
// background. A retention pass arms the idle release too. Once the writer has
// been idle for Options.IdleAfter, a timer's goroutine drops the file's pages from the
// process's resident set (ReleaseMapped) and publishes Idle; Close stops the timer
// and waits for a release under way. Nothing is published after Close returns. The caller
// that opened the DB closes it. The entity types (Triggers, Runtimes, ...) start none.
//
// # Durability
//
// With the default options every method that writes returns only after bbolt has
// written the pages and called fdatasync on the file. A CreateTrigger with its audit
// record costs about 1.6x a bare one-key bbolt commit (0.6-0.7 ms p50 against 0.4 ms
// on a loaded 2-core VM; benchmarks/store_test.go); with NoSync about 0.1 ms.
//
//   - kill -9 of nudge (or any crash of the process): costs nothing that a method had
//     returned for, in either mode. bbolt writes with pwrite before the commit returns,
//     so the data is in the kernel's page cache and survives the process. A transaction
//     in flight is lost as a whole; the file reopens cleanly.
//   - Power loss or a kernel crash, default mode: costs nothing that had returned,
//     provided the disk honours flushes. A transaction in flight is lost as a whole.
//   - Power loss or a kernel crash, NoSync: may lose every commit since the kernel
//     last flushed the file (typically up to ~30 s of writes), and because bbolt then
//     does not order its page writes against its meta page, the file can be left
//     corrupt. NoSync is for tests and benchmarks only.
//
// So "durable before the API answers" in nudge means durable against a crash of nudge
// in both modes, and against power loss only in the default mode.
package store
