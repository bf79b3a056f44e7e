// Package nudge holds the vocabulary shared by nudge's packages: failure codes,
// runtime states, trigger states and results, and readiness; and the domain records
// every package passes around (records.go): Runtime, Trigger, Attempt, AuditRecord and
// Schedule, whose JSON is both the API's and the store's encoding. Beside them, the
// text rules every package shares, each in one place: the id charset and validator
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
//	cmd/nudge        package main: flags, the daemon's wiring, the CLI and the TUI
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
//	cmd/nudge → server → api, auth, events, and the library rooms below
//	cmd/nudge → observe, notify, mcp, tui, doctor → (api | events | panes, controlmode)
//	cmd/nudge → inject, ack, detector → panes → controlmode
//	panes, inject, ack, auth, events → store (which imports none of them)
//	every package → nudge (which imports only the standard library)
//
// A room learns what happens elsewhere only through the hooks its Config takes (OnOutput,
// OnChange, OnStep, ...). Package main wires them (cmd/nudge/hooks.go), which carries
// the arrows that run against the imports: a pane's output goes from the registry's
// connection to the pipeline (echo and submit detection), the ack tracker and the
// monitor; readiness from the monitor, runtime changes from the registry, trigger changes
// from the pipeline and fallback steps from the chain go to the event hub, the observer,
// and back to the pipeline as a kick. The server holds no state: it calls the registry,
// pipeline, store, scheduler, authority and hub through interfaces it declares.
//
// # Who owns which goroutine
//
// Every long-lived goroutine has one owner that starts it in its constructor or Open and
// stops and joins it in Close; the daemon (cmd/nudge, openDaemon) opens the owners in
// dependency order and closes them in reverse:
//
//	controlmode.Conn     its read loop (and the tmux process), until Close
//	panes.Registry       per workspace, a connection loop and a reconciliation loop
//	detector.Monitor     its refresh loop and one goroutine per watched pane
//	inject.Pipeline      one lane per runtime (in order delivery), finishing and
//	                     SubmitAsync goroutines
//	inject.Scheduler     its loop (Close before the pipeline it submits into)
//	store.DB             the write-behind drain and the consistency check
//	events.Hub           its background sequencer and trimmer
//	observe.Observer     the hub consumer and the status-line writer
//	notify.Notifier      the hub consumer and each --notify-command run
//	auth.Authority       the runtime-token renewal loop (Start, Close)
//	server.Server        one serving goroutine per listener; net/http's per-connection
//	                     goroutines end in its Shutdown
//
// ack owns no goroutine: its tracker is fed by the registry's read loops, its chain runs
// on the pipeline's goroutines. Hooks run on the reporting room's goroutine and never
// block it.
package nudge
