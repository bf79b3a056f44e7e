// Package api is nudge's external contract on the unix socket: the request, response and
// error records as the daemon sends them, and a Go Client for them. The JSON names are the
// wire format; golden tests pin them against what a real daemon answers.
package api

import (
	"encoding/json"
	"time"

	"github.com/nudgehq/nudge"
)

// Error is the body of every non-2xx answer: {error_code, message}.
type Error struct {
	ErrorCode nudge.Code `json:"error_code"`
	Message   string     `json:"message"`
}

func (e *Error) Error() string { return string(e.ErrorCode) + ": " + e.Message }

// Health is GET /v1/health.
type Health struct {
	OK        bool      `json:"ok"`
	Runtimes  int       `json:"runtimes"`
	StartedAt time.Time `json:"started_at"`
	Version   string    `json:"version"`
}

// Runtime is a managed or registered agent runtime as GET /v1/runtimes shows it.
type Runtime struct {
	RuntimeID       string          `json:"runtime_id"`
	WorkspaceID     string          `json:"workspace_id"`
	Host            string          `json:"host,omitempty"`
	Role            string          `json:"role"`
	AgentID         string          `json:"agent_id"`
	Agent           string          `json:"agent"`
	SessionID       string          `json:"session_id,omitempty"`
	Dir             string          `json:"dir,omitempty"`
	Argv            []string        `json:"argv,omitempty"`
	Managed         bool            `json:"managed"`
	TmuxSession     string          `json:"tmux_session"`
	TmuxWindow      string          `json:"tmux_window"`
	TmuxPane        int             `json:"tmux_pane"`
	Target          string          `json:"target"`
	PaneID          string          `json:"pane_id"`
	PID             int             `json:"pid,omitempty"`
	Status          nudge.Status    `json:"status"`
	Readiness       nudge.Readiness `json:"readiness"`
	Summary         string          `json:"summary,omitempty"`
	OperatorBusy    bool            `json:"operator_busy"`
	InputLine       string          `json:"input_line,omitempty"`
	Paused          bool            `json:"paused"`
	ExitStatus      *int            `json:"exit_status,omitempty"`
	LastHeartbeatAt time.Time       `json:"last_heartbeat_at,omitempty"`
	LastCursor      string          `json:"last_cursor,omitempty"`
	LastTriggerID   string          `json:"last_trigger_id,omitempty"`
	Breaker         string          `json:"breaker,omitempty"`
	CooldownUntil   *time.Time      `json:"cooldown_until,omitempty"`
	Failures        []time.Time     `json:"failures,omitempty"`
	Restarts        int             `json:"restarts"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
	StatusSince     time.Time       `json:"status_since"`
	QueueDepth      int             `json:"queue_depth"`
}

// SpawnRequest is POST /v1/runtimes: start an agent in a new pane of a workspace.
type SpawnRequest struct {
	Workspace  string   `json:"workspace"`
	Role       string   `json:"role"`
	Agent      string   `json:"agent"`
	AgentID    string   `json:"agent_id,omitempty"`
	Dir        string   `json:"dir,omitempty"`
	SessionID  string   `json:"session_id,omitempty"`
	PromptFile string   `json:"prompt_file,omitempty"`
	Argv       []string `json:"argv,omitempty"`
	Host       string   `json:"host,omitempty"`
}

// ReasonRequest is the optional body of stop and restart.
type ReasonRequest struct {
	Reason string `json:"reason,omitempty"`
}

// Tail is GET /v1/runtimes/{id}/tail: the pane's last lines.
type Tail struct {
	RuntimeID  string    `json:"runtime_id"`
	PaneID     string    `json:"pane_id"`
	Lines      []string  `json:"lines"`
	CapturedAt time.Time `json:"captured_at"`
}

// TriggerRequest is POST /v1/triggers.
type TriggerRequest struct {
	TriggerID      string `json:"trigger_id,omitempty"` // idempotency key; "" the daemon makes one
	Workspace      string `json:"workspace"`
	Agent          string `json:"agent"`
	ThreadID       string `json:"thread_id,omitempty"`
	Prompt         string `json:"prompt"`
	AckTimeoutMS   int64  `json:"ack_timeout_ms,omitempty"`
	ForceOverride  bool   `json:"force_override,omitempty"`
	Reason         string `json:"reason,omitempty"`
	OverrideIntent string `json:"override_intent,omitempty"`
}

// Trigger is a trigger and its receipt (POST /v1/triggers, GET /v1/triggers/{id}).
type Trigger struct {
	TriggerID      string `json:"trigger_id"`
	WorkspaceID    string `json:"workspace"`
	Agent          string `json:"agent"`
	RuntimeID      string `json:"runtime_id,omitempty"`
	Host           string `json:"host,omitempty"`
	ThreadID       string `json:"thread_id,omitempty"`
	Prompt         string `json:"prompt"`
	Reason         string `json:"reason,omitempty"`
	AckTimeoutMS   int64  `json:"ack_timeout_ms,omitempty"`
	ForceOverride  bool   `json:"force_override,omitempty"`
	OverrideIntent string `json:"override_intent,omitempty"`
	Caller         string `json:"caller,omitempty"`
	CallerUID      int    `json:"caller_uid"`
	ScheduleID     string `json:"schedule_id,omitempty"`

	State             nudge.TriggerState `json:"state"`
	Result            nudge.Result       `json:"result"`
	ErrorCode         nudge.Code         `json:"error_code,omitempty"`
	Message           string             `json:"message,omitempty"`
	DeliveryBackend   string             `json:"delivery_backend,omitempty"`
	AckSignal         string             `json:"ack_signal,omitempty"`
	Fallback          string             `json:"fallback,omitempty"`
	FallbackRuntimeID string             `json:"fallback_runtime_id,omitempty"`
	FallbackPane      string             `json:"fallback_pane,omitempty"`
	Attempts          int                `json:"attempts"`
	Closed            bool               `json:"closed"`
	QueuedInAgent     bool               `json:"queued_in_agent,omitempty"`

	CreatedAt     time.Time  `json:"created_at"`
	QueuedAt      time.Time  `json:"queued_at"`
	DeferredAt    *time.Time `json:"deferred_at,omitempty"`
	DeferredUntil *time.Time `json:"deferred_until,omitempty"`
	InjectedAt    *time.Time `json:"injected_at,omitempty"`
	SubmittedAt   *time.Time `json:"submitted_at,omitempty"`
	DeliveredAt   *time.Time `json:"delivered_at,omitempty"`
	AckedAt       *time.Time `json:"acked_at,omitempty"`
	FailedAt      *time.Time `json:"failed_at,omitempty"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

// WaitFor names the receipt state a caller waits for.
type WaitFor string

const (
	WaitSubmitted WaitFor = "submitted" // the prompt was submitted to the agent (or acked)
	WaitAcked     WaitFor = "acked"     // the agent acknowledged it
	WaitClosed    WaitFor = "closed"    // no more work will be done for it (acked or failed)
)

// Reached reports whether t has reached w. A closed trigger reaches nothing more.
func (t Trigger) Reached(w WaitFor) bool {
	switch w {
	case WaitSubmitted:
		return t.State == nudge.StateSubmitted || t.State == nudge.StateAcked || t.SubmittedAt != nil
	case WaitAcked:
		return t.State == nudge.StateAcked
	case WaitClosed:
		return t.Closed
	}
	return false
}

// AuditRecord is one entry of the hash-chained audit log (GET /v1/audit).
type AuditRecord struct {
	Seq       uint64          `json:"seq"`
	Time      time.Time       `json:"time"`
	Event     string          `json:"event"`
	TriggerID string          `json:"trigger_id,omitempty"`
	ThreadID  string          `json:"thread_id,omitempty"`
	RuntimeID string          `json:"runtime_id,omitempty"`
	Workspace string          `json:"workspace,omitempty"`
	Subject   string          `json:"subject,omitempty"`
	PeerUID   *int            `json:"peer_uid,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Code      nudge.Code      `json:"error_code,omitempty"`
	Detail    json.RawMessage `json:"detail,omitempty"` // the event's own fields, as recorded
	PrevHash  string          `json:"prev_hash"`
	Hash      string          `json:"hash"`
}

// Schedule is a periodic prompt (GET/POST /v1/schedules).
type Schedule struct {
	ScheduleID  string        `json:"schedule_id"`
	WorkspaceID string        `json:"workspace"`
	Agent       string        `json:"agent"`
	Prompt      string        `json:"prompt"`
	Every       time.Duration `json:"every"` // nanoseconds
	NextAt      time.Time     `json:"next_at"`
	LastAt      time.Time     `json:"last_at,omitempty"`
	CreatedAt   time.Time     `json:"created_at"`
}

// ScheduleRequest is POST /v1/schedules.
type ScheduleRequest struct {
	Workspace string `json:"workspace"`
	Agent     string `json:"agent"`
	Prompt    string `json:"prompt"`
	Every     string `json:"every"` // a Go duration, e.g. "30m"
}

// TriggerFilter selects receipts for GET /v1/triggers.
type TriggerFilter struct {
	Workspace, Agent, RuntimeID, ThreadID string
	OpenOnly                              bool // only triggers not yet closed
	Newest                                bool // the newest Limit, not the oldest
	Limit                                 int
}
