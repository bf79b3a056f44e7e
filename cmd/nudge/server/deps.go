package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/panes"
	"github.com/nudgehq/nudge/store"
)

// Deps is what the server consumes. Every field is required except Events and Metrics
// (nil: /v1/events answers 404, /metrics an empty body).
type Deps struct {
	Auth      Authenticator
	Tokens    Tokens
	Policy    Policy
	Runtimes  Runtimes
	Panes     Panes
	Triggers  Triggers
	Acks      Acks
	Store     Store
	Schedules Schedules
	Events    Events
	Metrics   Metrics
	Dialogs   Dialogs // nil: POST /v1/runtimes/{id}/answer answers 503
	Heads     Heads   // nil: POST /v1/threads/{id}/head answers 503
	Web       Web     // nil: POST /v1/web/pair answers 503 (the web view is off)
	Perms     Perms   // nil: POST /v1/runtimes/{id}/permission answers with no decision
}

// Perms holds the permission requests agents' hooks post until nudge answers their
// dialogs (satisfied by *permhook.Keeper).
type Perms interface {
	Ask(ctx context.Context, rt nudge.Runtime, req api.PermissionRequest) (api.PermissionDecision, error)
}

// Heads keeps threads' newest messages for the unread wake policy (satisfied by
// *wake.Waker).
type Heads interface {
	Head(workspace, agent, thread, head string) (nudge.Runtime, error)
}

// Web makes pairing links of the web view (satisfied by *web.Server).
type Web interface {
	Pair(c auth.Caller, req api.WebPairRequest) (api.WebPairing, error)
}

// Dialogs answers an agent's approval dialog (satisfied by *dialogs.Answerer).
type Dialogs interface {
	Answer(ctx context.Context, rt nudge.Runtime, dialogID, choice, who, reason string) (nudge.Dialog, nudge.DialogOption, error)
}

// check reports a required dependency that is missing.
func (d Deps) check() error {
	for name, missing := range map[string]bool{"Auth": d.Auth == nil, "Tokens": d.Tokens == nil, "Policy": d.Policy == nil,
		"Runtimes": d.Runtimes == nil, "Panes": d.Panes == nil, "Triggers": d.Triggers == nil, "Acks": d.Acks == nil,
		"Store": d.Store == nil, "Schedules": d.Schedules == nil} {
		if missing {
			return errors.New("server: Deps." + name + " is required")
		}
	}
	return nil
}

// Authenticator turns a connection's peer and its Authorization header into a caller
// (satisfied by *auth.Authority).
type Authenticator interface {
	Authenticate(p auth.Peer, authorization string) (auth.Caller, error)
}

// Tokens issues and revokes tokens (satisfied by *auth.Authority).
type Tokens interface {
	Issue(c auth.Caller, req auth.IssueRequest) (string, auth.Issued, error)
	Revoke(c auth.Caller, id string) (auth.Issued, error)
	List(c auth.Caller) ([]auth.Issued, error)
	RotateKey(c auth.Caller) error
	RevokeRuntime(ctx context.Context, id string)
}

// Policy is the workspace policy (satisfied by *auth.Policy, nil included).
type Policy interface {
	CheckSpawn(c auth.Caller, s *auth.Spawn) error
	CheckRegister(c auth.Caller, workspace, agent string) error
	CheckTrigger(c auth.Caller, workspace, agent string) error
}

// Runtimes is the registry of runtimes (satisfied by *panes.Registry).
type Runtimes interface {
	List() []nudge.Runtime
	Get(id string) (nudge.Runtime, bool)
	Spawn(ctx context.Context, req panes.SpawnRequest) (nudge.Runtime, error)
	Register(ctx context.Context, req panes.RegisterRequest) (nudge.Runtime, error)
	Deregister(ctx context.Context, id, reason string) error
	Stop(ctx context.Context, id, reason string) error
	Restart(ctx context.Context, id, reason string) (nudge.Runtime, error)
	SetPaused(id string, paused bool, reason string) (nudge.Runtime, error)
	Update(id string, fn func(*nudge.Runtime)) (nudge.Runtime, error)
	Profile(name string) (panes.Profile, bool)
	HostOf(workspace string) string
}

// Panes reads a runtime's pane: its last lines, cleaned for display and redacted; and
// lists the panes no runtime claims (satisfied by *panes.Registry).
type Panes interface {
	Tail(ctx context.Context, rt nudge.Runtime, lines int) (panes.Screen, error)
	Unmanaged() []panes.Stray
}

// Triggers is the trigger pipeline (satisfied by *inject.Pipeline).
type Triggers interface {
	Submit(ctx context.Context, req inject.Request) (inject.Submitted, error)
	Get(id string) (nudge.Trigger, error)
	Wait(ctx context.Context, id string, cond func(nudge.Trigger) bool) (nudge.Trigger, error)
	Ack(ctx context.Context, id string) (nudge.Trigger, error)
	Depth(runtimeID string) int
	Kick(runtimeID string)
	Progress(workspace, agent, thread string)
	Force(id, subject, reason, intent string) (nudge.Trigger, error)
	Unblock(thread string, allow func(workspace string) bool) []string
}

// Acks takes heartbeats (satisfied by *ack.Tracker).
type Acks interface {
	Heartbeat(runtimeID string, at time.Time, cursor string) (advanced bool)
	// Offline takes an offline heartbeat: it acks nothing; its cursor only becomes the
	// one a later heartbeat must advance past.
	Offline(runtimeID, cursor string)
}

// Store is the part of the store the API reads and audits into (satisfied by the
// store's parts side by side: *store.DB for Flush, its Triggers, AuditLog, Schedules
// and Runtimes).
type Store interface {
	Flush()
	GetTrigger(id string) (nudge.Trigger, error)
	ListTriggers(f store.TriggerFilter) ([]nudge.Trigger, error)
	AppendAudit(recs ...nudge.AuditRecord) ([]nudge.AuditRecord, error)
	Audit(f store.AuditFilter) ([]nudge.AuditRecord, error)
	VerifyAudit() (int, error)
	ListSchedules() ([]nudge.Schedule, error)
	// ListRuntimes lists every runtime record, the deregistered (collected) ones too.
	ListRuntimes() ([]nudge.Runtime, error)
}

// Schedules adds and removes periodic prompts (satisfied by *inject.Scheduler).
type Schedules interface {
	Add(ws, agent, prompt string, every time.Duration) (nudge.Schedule, error)
	Remove(id string) error
}

// Events is the event hub (satisfied by *events.Hub): it serves GET /v1/events (a replay
// and, asked for, a live stream), showing only the events show allows. An error is
// answered before any event was written (a bad or expired since).
type Events interface {
	Serve(w http.ResponseWriter, r *http.Request, show func(events.Event) bool) error
}

// Metrics writes the Prometheus text format (satisfied by *observe.Observer).
type Metrics interface {
	WritePrometheus(w io.Writer) error
}
