// Package nudge holds the vocabulary shared by nudge's packages: failure codes,
// runtime states, trigger states and results, and readiness; the domain records every
// package passes around (records.go): Runtime, Trigger, Attempt, AuditRecord and
// Schedule, whose JSON is both the API's and the store's encoding; and the in-process
// Bus the rooms tell each other their news on (bus.go), with the domain events it
// carries (events.go: RuntimeChanged, TriggerChanged, ReadinessChanged, ReplyRead, ...).
// Beside them, the text rules every package shares, each in one place: the id charset and validator
// (id.go: IsIDByte, ValidID, CheckID), the redactor (redact.go: Redact) and the ANSI
// stripper (plain.go: Plain for a stream, StripANSI for a string). It imports only the
// standard library.
//
// # Rooms
//
// nudge is a daemon that holds one tmux control-mode connection per workspace and types
// prompts ("triggers") into the agents running in its panes. Each concern has a room
// (a package) of its own:
//
//	nudge            this package: the words and records every room shares
//	controlmode      one tmux -C connection: reader, command pipeline, flow control
//	panes            the registry of runtimes and its state machine: spawn, adopt, stop,
//	                 reconcile; agent profiles; one connection per workspace
//	detector         human input and readiness, from the output stream and one capture
//	inject           the trigger pipeline: durable queue, gates, sanitizing, delivery;
//	                 the scheduler of periodic prompts
//	ack              receipts: ack signals and their tracker, the fallback chain
//	store            bbolt behind domain methods; it persists this package's records
//	cmd/nudge        package main: wires the command line to the process, nothing else
//	cmd/nudge/cli    the command line: cobra commands, flags, exit codes, printers; its
//	                 tests are the end-to-end suite on real daemons
//	cmd/nudge/daemon `nudge serve`: its config and flags, Open, Run, Close, the feed
//	cmd/nudge/api    the external contract: request, answer and event bodies, Client
//	cmd/nudge/server the unix-socket HTTP server and every handler, on interfaces
//	cmd/nudge/auth   tokens, the token authority, policy, the caller's scope
//	cmd/nudge/events the durable event hub behind /v1/events
//	cmd/nudge/observe metrics, alerts, the tmux status line
//	cmd/nudge/notify notifications (tmux messages, --notify-command)
//	cmd/nudge/mcp    the MCP server on stdio, on api.Client
//	cmd/nudge/tui    `nudge watch`, the live dashboard on tcell, on api.Client
//	cmd/nudge/doctor `nudge doctor`: what nudge needs, on every host in use
//
// # Arrows
//
// Imports point one way, from the binary down to the connection:
//
//	cmd/nudge → cli → daemon (from serve alone) → server → api, auth, events, and below
//	daemon → observe, notify, doctor → (api | events | panes, controlmode)
//	cli → mcp, tui → view → api: the dashboard speaks only the client
//	daemon → inject, ack, detector → panes → controlmode
//	panes, inject, ack, auth, events → store (which imports none of them)
//	every package → nudge (which imports only the standard library)
//
// The test rigs (cmd/nudge/standin, cmd/nudge/streamrec, benchmarks/internal) are imported
// by tests and benchmarks only. cmd/nudge/cli's TestImportArrows holds these arrows.
//
// A room learns what happens elsewhere only from the Bus (bus.go): it publishes the
// events it owns (events.go) and subscribes in its own Open to those it reacts to, each
// subscriber with its own goroutine and queue. "Who reacts to X" is a search for
// Subscribe(…, func(ev X)). The news that runs against the imports:
//
//	panes     RuntimeChanged  → ack (follow its record), detector (watch it), inject (kick
//	                            a ready runtime), observe, the event stream
//	          PaneEvent       → detector
//	          FirstPrompt     → inject (the spawn's first trigger)
//	detector  ReadinessChanged → inject (kick), dialogs (a dialog shown), observe, the stream
//	          HumanDone, OperatorQuiet → inject (the orchestrator's sync, then a kick)
//	          QueueEmptied    → ack (heartbeats ack the queued prompts from then)
//	ack       ReplyRead       → inject (the reply on the receipt)
//	          FallbackStep    → the event stream
//	inject    TriggerChanged  → observe, the event stream (its reply event, when it carries one)
//	          CollisionHeld   → the event stream
//	dialogs   DialogShown, DialogAnswerSent → the event stream
//
// and, for telemetry, events of their publishers' own packages: detector.Captured → the
// status files, detector.LLMCall and TriggerTyped → observe, observe.Alert → the event
// stream, store.LaterFailed, HealthChanged, Idle and RetainStats → the daemon's log.
//
// Pane output is not an event but the hot path: the registry's connection read goroutine
// calls every OutputReader directly (Bus.Output: the ack tracker's marker matcher, the
// monitor, the pipeline's echo detection), with no queue and no allocation. The event
// stream (cmd/nudge/daemon/feed.go) is the daemon's own subscriber, opened before the registry.
// The server holds no state: it calls the registry, pipeline, store, scheduler,
// authority and hub through interfaces it declares.
//
// # Who owns which goroutine
//
// Every long-lived goroutine has one owner that starts it in its constructor or Open and
// stops and joins it in Close; the daemon (cmd/nudge, openDaemon) opens the owners in
// dependency order and closes them in reverse:
//
//	nudge.Bus            one goroutine per subscriber (nudge.Client), each closed by
//	                     the room that made it; Bus.Close, last, drains those left
//	controlmode.Conn     its read loop (and the tmux process), until Close
//	panes.Registry       per workspace, a connection loop and a reconciliation loop
//	ack.Tracker          one reader per followed agent record, and its subscriber
//	detector.Monitor     its refresh loop, one goroutine per watched pane, its subscriber
//	inject.Pipeline      one lane per runtime (in order delivery), finishing and
//	                     SubmitAsync goroutines, its two subscribers
//	inject.Scheduler     its loop (Close before the pipeline it submits into)
//	store.DB             the write-behind drain and the consistency check
//	events.Hub           its background sequencer and trimmer
//	observe.Observer     its counting loop, its subscriber and the status-line writer
//	notify.Notifier      the hub consumer and each --notify-command run
//	auth.Authority       the runtime-token renewal loop (Start, Close)
//	server.Server        one serving goroutine per listener; net/http's per-connection
//	                     goroutines end in its Shutdown
//
// The ack chain runs on the pipeline's goroutines. Publish never blocks the publisher: a
// subscriber's queue grows rather than drop an event (see Bus), so a slow subscriber (a
// notify command, a full disk) delays only itself.
package nudge
