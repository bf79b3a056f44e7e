// Package daemon is a running `nudge serve`: its configuration (serve.go: each room's
// Config from its DefaultConfig, Flags binding the flags to their fields) and its life
// (daemon.go: Open opens the rooms in dependency order on one nudge.Bus, Run serves,
// Close closes them in reverse). Each room subscribes to what it reacts to in its own
// Open; feed.go puts the rooms' news on the event stream. The socket API is package
// server; the root package's doc has the map.
//
// Only the command line's `serve` (package cli) and the end-to-end suite import it.
package daemon
