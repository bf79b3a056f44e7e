// Package hub joins nudge daemons on several hosts into one fleet through NATS with
// JetStream. One daemon runs the hub (serve --hub-listen: an embedded NATS server with
// JetStream, its streams and buckets under <state-dir>/hub); the others join it as
// members (serve --hub URL), each with its own identity. Every daemon stays what it is
// alone: its own store, its own tmux, its own pipeline. The hub adds:
//
//   - routing: a trigger for a workspace that lives on another host is published on the
//     work-queue stream NUDGE_TRIGGERS (subject nudge.trig.HOST.SENDER) with the trigger
//     id as its message id (JetStream drops a repeat). The hub runs a durable consumer per
//     host and hands each trigger to its host (nudge.deliver.HOST), whose pipeline is
//     idempotent by trigger id; the message is acked only once the host answers that it
//     holds it. A host that is away finds it waiting when it returns, unless its deadline
//     (a per-message TTL, --hub-max-queue) passed first.
//   - receipts: each host's receipts of the triggers it routed or holds are kept in the
//     bucket nudge_receipts under its name; any member reads them.
//   - the fleet: each host sends its heartbeat and its runtimes; the hub judges who is
//     here (3 beats), keeps the runtime lists (nudge_runtimes) and alone decides which host
//     holds a workspace (nudge_ws, first claim wins, --hub-users may restrict it).
//   - identities: each member authenticates with its own user (password or NKey, from a
//     file). A member has no JetStream access: it asks the hub's service (api.go:
//     nudge.api.HOST.OP) and other members (nudge.ctl.TO.FROM.OP), its own name in each
//     subject, which its permissions allow with no other name; the hub and members answer
//     only on the requester's own inbox. So a member can write nothing in another's name,
//     not even by having the server or a responder reply onto another's subject.
//
// Main types:
//
//	Config  the serve flags of the hub (Flags binds them)
//	Fleet   one daemon's part in the fleet: Open, Wrap, Remote, HostOf, Close
//	hubAPI  what a host asks of the hub (direct on the hub, remote on a member)
//	Local   what the fleet hands triggers to (satisfied by *inject.Pipeline)
//
// The daemon opens one Fleet (nil when neither --hub nor --hub-listen is given: every
// method of a nil *Fleet is a no-op) and wraps its API's dependencies with it, so the
// API, the CLI and MCP act on the whole fleet without knowing of it.
package hub
