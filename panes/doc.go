// Package panes keeps the registry of managed agent runtimes true: it spawns agents as
// the command of a tmux pane (argv, never a shell string), adopts existing panes, stops,
// pauses and restarts them, and reconciles the records against tmux on every
// control-mode event and on a sweep. It also holds the agent profiles (launch, resume,
// submit timing, readiness) and the runtime state machine.
//
// The main types are:
//
//	Registry  the live registry: Open, Spawn, Register, Stop, Deregister, Restart,
//	          SetPaused, Transition, Update, Get/Lookup/List, Conn, Close; and for the
//	          fallback chain RelaunchWith, LaunchWindow, SpawnAside, EnterRecovery,
//	          HoldRestarts; each a method of its own that calls the part doing it
//	Reader    the registry's read model (Get, Lookup, List), for a consumer that only
//	          looks at runtimes
//	Store     what Open takes of the store (*store.DB hands out the parts it names)
//	Config    tmux server selection, workspace roots, profiles, reconciliation policy,
//	          launcher policy, the Bus it reports on (pane output; RuntimeChanged,
//	          PaneEvent, FirstPrompt)
//	Profile   one agent CLI as data (LoadProfiles: built-ins from profiles/*.json,
//	          overridable file by file; LaunchArgv, ResumeLiveArgv, DrivesShell)
//	Target    a parsed register target (ParseTarget)
//
// Registry is a façade: Open wires one of each of these, and each owns its own state.
//
//	records     the runtime records (nudge.Runtime by id) and what is noted about each
//	            (busy, stopped, held, a fallback resume run, a crash resume), under one
//	            lock; persisted write-behind (persist.go). The Registry's Get, Lookup,
//	            List, Transition, Update, SetPaused, EnterRecovery, Stopped and
//	            HoldRestarts call its own. The others share it through that lock and its
//	            methods.
//	conns       the workspaces (workspace.go): one control connection each, the place
//	            (host, tmux server, session: place.go) a workspace is bound to, and what
//	            runs over the connection (list-panes,
//	            reap, Tail and the kept screens, SetSessionEnv, SetPaneOption); its own
//	            lock for the map, taken after the records' lock when both are held.
//	launcher    argv and launcher policy (launcher.go, dirs.go), Spawn, Register,
//	            Restart and relaunch (restart.go), the fallback's RelaunchWith,
//	            LaunchWindow and SpawnAside (launch.go, fallback.go).
//	ender       ending a pane's program by pid (end.go, proctree.go; over ssh,
//	            endremote.go) and Stop (stop.go).
//	reconciler  events and the sweep (reconcile.go), exits and completion markers
//	            (exit.go), crash recovery (recovery.go), start timeouts (start.go); its
//	            own lock for the dead-pane clock.
//	tmuxClient  tmux as a subprocess, locally or over ssh, each command bounded.
//
// Beside them: the state machine (state.go: CanTransition, Live; every edge and why) and
// the name rules (ValidWorkspace, ValidRole, RuntimeID, SessionName).
//
// Topology (seed 001 §4): session agents_<ws> on nudge's own tmux server, one window per
// role, pane 0; or, for a workspace a register bound to a user's own session on the user's
// own server (seed 004, place.go), that session, never created, killed or opened a
// window in by nudge; runtime ids
// are RuntimeID(ws, role), stable across restarts of the same role. The registry owns
// the live records (nudge.Runtime) and writes every change behind to the store
// (store.Runtimes.PutRuntimeLater, in order); Spawn, Register and Stop flush before they
// return, so what they did is durable.
//
// Done is not a crash (seed 003, exit.go): a program that exits 0 or prints its
// profile's completion marker is exited, not restarted; a crash (non-zero status, a
// signal, no status) is offline, counted toward the crash loop, and restarted after
// RestartDelay unless it loops. A runtime still starting past its start timeout is
// failed with its screen (redacted, nudge.Redact) as evidence.
//
// Stop and every relaunch end the pane's program by pid before the pane is killed or
// replaced (end.go, proctree.go): C-c (stop only), SIGHUP, SIGTERM, SIGKILL to the pane's
// process, its descendants and any process carrying the pane's tmux environment, each
// step bounded; a program that outlives them all fails the operation (STOP_FAILED,
// SPAWN_FAILED), and the audit says which step ended it.
//
// # Goroutines
//
// The Registry's group owns them all: one context and one WaitGroup; Close cancels,
// waits, and flushes the store, and after Close the group starts none. Each workspace
// gets two when conns first uses it: conns.connLoop, which keeps one control connection
// (controlmode.Conn) to the workspace's session attached, redialling with backoff, and
// owns and closes it; and reconciler.loop, which reconciles on every event that can
// change the panes and on the sweep. An automatic restart (reconciler.scheduleRestart)
// waits RestartDelay on a goroutine of its own. The launcher and the ender start none:
// they run on their caller's goroutine, every step bounded. Pane output
// (nudge.Bus.Output) and the events published from a connection's read goroutine
// (nudge.PaneEvent) never block it: the bus queues an event for its subscribers.
package panes
