// Package hub joins nudge daemons on several hosts into one fleet through NATS with
// JetStream. One daemon runs the hub (serve --hub-listen: an embedded NATS server with
// JetStream, its streams and buckets under <state-dir>/hub); the others join it as
// members (serve --hub URL), each with its own identity. Every daemon stays what it is
// alone: its own store, its own tmux, its own pipeline. The hub adds:
//
//   - routing: a trigger for a workspace that lives on another host is published on the
//     work-queue stream NUDGE_TRIGGERS (subject nudge.trig.HOST.SENDER) with the trigger id as
//     its message id (JetStream drops a repeat); that host's durable consumer hands it to
//     its local pipeline, which is idempotent by trigger id, and only then acks it. A host
//     that is away finds it waiting when it returns, unless its deadline (a per-message
//     TTL, --hub-max-queue) passed first.
//   - receipts: each host writes the receipts of the triggers it routed or holds to the
//     bucket nudge_receipts under its own name; any member reads them.
//   - the fleet: each host writes its runtimes to nudge_runtimes and a heartbeat to
//     nudge_hosts (a TTL: a host that stops beating is away); the hub alone decides which
//     host holds a workspace (nudge_ws, first claim wins, --hub-users may restrict it).
//   - identities: each member authenticates with its own user (password or NKey, from a
//     file) whose subject permissions let it publish only under its own name.
//
// Main types:
//
//	Config  the serve flags of the hub (Flags binds them)
//	Fleet   one daemon's part in the fleet: Open, Wrap, List, Close
//	Local   what the fleet hands triggers to (satisfied by *inject.Pipeline)
//
// The daemon opens one Fleet (nil when neither --hub nor --hub-listen is given: every
// method of a nil *Fleet is a no-op) and wraps its API's dependencies with it, so the
// API, the CLI and MCP act on the whole fleet without knowing of it.
package hub
