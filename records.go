package nudge

import (
	"encoding/json"
	"time"
)

// Runtime is a managed agent runtime (seed 001 §5). The registry in package panes owns
// the live copy; package store keeps the durable one. JSON field names are the API's and
// the store's encoding: never change a tag.
type Runtime struct {
	RuntimeID   string `json:"runtime_id"`
	WorkspaceID string `json:"workspace_id"`
	Host        string `json:"host,omitempty"` // ssh destination of the workspace's tmux (bound when first created); "" local
	// TmuxSocket is the tmux server of the workspace's panes when it is not nudge's own: a
	// socket name (tmux -L; "default" is a plain `tmux`) or an absolute socket path (tmux
	// -S). "" is nudge's own server. Bound, like Host, when the workspace is first used.
	TmuxSocket      string    `json:"tmux_socket,omitempty"`
	Role            string    `json:"role"`
	AgentID         string    `json:"agent_id"` // defaults to Role
	Agent           string    `json:"agent"`    // profile name: codex, claude, shell, ...
	SessionID       string    `json:"session_id,omitempty"`
	Dir             string    `json:"dir,omitempty"`
	Argv            []string  `json:"argv,omitempty"`
	Managed         bool      `json:"managed"`
	TmuxSession     string    `json:"tmux_session"`
	TmuxWindow      string    `json:"tmux_window"`
	TmuxPane        int       `json:"tmux_pane"` // pane index in the window
	Target          string    `json:"target"`    // session:window.pane
	PaneID          string    `json:"pane_id"`   // %N, stable while the pane lives
	PID             int       `json:"pid,omitempty"`
	Status          Status    `json:"status"`
	Readiness       Readiness `json:"readiness"`
	Summary         string    `json:"summary,omitempty"`
	OperatorBusy    bool      `json:"operator_busy"`
	InputLine       InputLine `json:"input_line,omitempty"` // empty, draft, ours, unknown
	Paused          bool      `json:"paused"`
	ExitStatus      *int      `json:"exit_status,omitempty"`
	LastHeartbeatAt time.Time `json:"last_heartbeat_at,omitzero"`
	HeartbeatStatus string    `json:"heartbeat_status,omitempty"` // of the last heartbeat: active, idle or offline
	LastCursor      string    `json:"last_cursor,omitempty"`
	LastTriggerID   string    `json:"last_trigger_id,omitempty"`
	// Breaker is the runtime's circuit breaker after repeated failed triggers: "" (closed),
	// "open" (cooling down until CooldownUntil: triggers wait with RUNTIME_COOLDOWN) or
	// "half_open" (one probe trigger goes; its ack closes it).
	Breaker       string      `json:"breaker,omitempty"`
	CooldownUntil *time.Time  `json:"cooldown_until,omitempty"`
	Failures      []time.Time `json:"failures,omitempty"` // recent crash times, for crash-loop detection
	Restarts      int         `json:"restarts"`
	CreatedAt     time.Time   `json:"created_at"`
	UpdatedAt     time.Time   `json:"updated_at"`
	StatusSince   time.Time   `json:"status_since"`
	// Dialog is the approval dialog the agent shows now (its readiness is
	// NEEDS_CONFIRMATION); nil when none, or when its pack cannot read it.
	Dialog *Dialog `json:"dialog,omitempty"`
}

// Dialog is an agent's approval dialog as data: what it asks and the options that answer
// it. DialogID changes whenever what the dialog shows does.
type Dialog struct {
	DialogID string `json:"dialog_id"`
	Title    string `json:"title"`
	Text     string `json:"text,omitempty"`
	// Command is the command the dialog asks to run, as the CLI draws it in its own
	// place (Claude Code's line under "Bash command", Codex's "$ " line), without the
	// agent's description or reason; "" when the dialog shows none or it cannot be told
	// apart. It is what workspace auto_answer rules match, whole.
	Command string         `json:"command,omitempty"`
	Options []DialogOption `json:"options"`
	// ApproveKey and DenyKey are the keys of the options `nudge approve` and `nudge
	// deny` pick ("" when none reads as yes or no).
	ApproveKey string    `json:"approve_key,omitempty"`
	DenyKey    string    `json:"deny_key,omitempty"`
	ShownAt    time.Time `json:"shown_at"`
}

// DialogOption is one answer of a Dialog: the tmux key that picks it and its label.
type DialogOption struct {
	Key   string `json:"key"`
	Label string `json:"label"`
}

// Trigger is one trigger request and its receipt. JSON field names are the API's and the
// store's encoding.
type Trigger struct {
	TriggerID      string `json:"trigger_id"`
	WorkspaceID    string `json:"workspace"`
	Agent          string `json:"agent"` // the role (agent id) addressed
	RuntimeID      string `json:"runtime_id,omitempty"`
	Host           string `json:"host,omitempty"` // the runtime's host (ssh destination) when accepted; "" local
	ThreadID       string `json:"thread_id,omitempty"`
	Prompt         string `json:"prompt"`
	Reason         string `json:"reason,omitempty"`
	AckTimeoutMS   int64  `json:"ack_timeout_ms,omitempty"`
	ForceOverride  bool   `json:"force_override,omitempty"`
	OverrideIntent string `json:"override_intent,omitempty"` // human_override | coordinator_override
	Caller         string `json:"caller,omitempty"`          // authenticated subject
	CallerUID      int    `json:"caller_uid"`
	ScheduleID     string `json:"schedule_id,omitempty"`

	State           TriggerState `json:"state"`
	Result          Result       `json:"result"`
	ErrorCode       Code         `json:"error_code,omitempty"`
	Message         string       `json:"message,omitempty"`
	DeliveryBackend string       `json:"delivery_backend,omitempty"`
	AckSignal       string       `json:"ack_signal,omitempty"` // marker | api | heartbeat | cursor | submitted
	Fallback        string       `json:"fallback,omitempty"`   // "", resume, spawn
	// Where a fallback put the prompt: the runtime it runs as (a fallback spawned beside
	// a kept pane is a runtime of its own, ROLE-fb-SUFFIX) and its pane.
	FallbackRuntimeID string `json:"fallback_runtime_id,omitempty"`
	FallbackPane      string `json:"fallback_pane,omitempty"`
	Attempts          int    `json:"attempts"`
	Closed            bool   `json:"closed"` // no more work will be done for it
	// QueuedInAgent: the agent took the prompt into its own queue (it was busy) instead
	// of starting a turn with it; only the turn that takes it up acks it.
	QueuedInAgent bool `json:"queued_in_agent,omitempty"`
	// Reply is the agent's answer in the turn that took the prompt, read from its own
	// session record (redacted, at most 64 KiB: ReplyTruncated when cut); TurnEndedAt is
	// when that turn ended. Both stay empty for an agent whose record is not read.
	Reply          string     `json:"reply,omitempty"`
	ReplyTruncated bool       `json:"reply_truncated,omitempty"`
	TurnEndedAt    *time.Time `json:"turn_ended_at,omitempty"`

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

// Attempt is one delivery attempt of a trigger (live, retry, resume or spawn).
type Attempt struct {
	TriggerID string          `json:"trigger_id"`
	N         int             `json:"n"`
	Backend   string          `json:"backend"` // tmux, resume, spawn
	StartedAt time.Time       `json:"started_at"`
	EndedAt   time.Time       `json:"ended_at,omitzero"`
	Outcome   string          `json:"outcome"`
	ErrorCode Code            `json:"error_code,omitempty"`
	Detail    json.RawMessage `json:"detail,omitempty"`
}

// AuditRecord is one entry of the append-only, hash-chained audit log. Seq and Hash are
// assigned by store.AuditLog.AppendAudit; PrevHash is the Hash of the record before
// (hex SHA-256).
type AuditRecord struct {
	Seq       uint64          `json:"seq"`
	Time      time.Time       `json:"time"`
	Event     string          `json:"event"` // e.g. runtime_registered, trigger_sent, ack_received
	TriggerID string          `json:"trigger_id,omitempty"`
	ThreadID  string          `json:"thread_id,omitempty"`
	RuntimeID string          `json:"runtime_id,omitempty"`
	Workspace string          `json:"workspace,omitempty"`
	Subject   string          `json:"subject,omitempty"` // authenticated caller
	PeerUID   *int            `json:"peer_uid,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Code      Code            `json:"error_code,omitempty"`
	Detail    json.RawMessage `json:"detail,omitempty"`
	PrevHash  string          `json:"prev_hash"`
	Hash      string          `json:"hash"`
}

// Schedule is a periodic trigger (seed 004).
type Schedule struct {
	ScheduleID  string        `json:"schedule_id"`
	WorkspaceID string        `json:"workspace"`
	Agent       string        `json:"agent"`
	Prompt      string        `json:"prompt"`
	Every       time.Duration `json:"every"`
	NextAt      time.Time     `json:"next_at"`
	LastAt      time.Time     `json:"last_at,omitzero"`
	CreatedAt   time.Time     `json:"created_at"`
}

// scheduleJSON is a Schedule as JSON: every as a Go duration ("10m0s"), field for field
// in the record's order.
type scheduleJSON struct {
	ScheduleID  string    `json:"schedule_id"`
	WorkspaceID string    `json:"workspace"`
	Agent       string    `json:"agent"`
	Prompt      string    `json:"prompt"`
	Every       string    `json:"every"`
	NextAt      time.Time `json:"next_at"`
	LastAt      time.Time `json:"last_at,omitzero"`
	CreatedAt   time.Time `json:"created_at"`
}

// MarshalJSON writes every as a duration string, as every duration nudge prints.
func (s Schedule) MarshalJSON() ([]byte, error) {
	return json.Marshal(scheduleJSON{s.ScheduleID, s.WorkspaceID, s.Agent, s.Prompt, s.Every.String(), s.NextAt, s.LastAt, s.CreatedAt})
}

// UnmarshalJSON reads every as a duration string, or as nanoseconds (records written
// before every was a string).
func (s *Schedule) UnmarshalJSON(b []byte) error {
	var v struct {
		scheduleJSON
		Every json.RawMessage `json:"every"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var every time.Duration
	if len(v.Every) > 0 && v.Every[0] == '"' {
		var str string
		if err := json.Unmarshal(v.Every, &str); err != nil {
			return err
		}
		d, err := time.ParseDuration(str)
		if err != nil {
			return err
		}
		every = d
	} else if len(v.Every) > 0 {
		if err := json.Unmarshal(v.Every, &every); err != nil {
			return err
		}
	}
	j := v.scheduleJSON
	*s = Schedule{ScheduleID: j.ScheduleID, WorkspaceID: j.WorkspaceID, Agent: j.Agent, Prompt: j.Prompt, Every: every,
		NextAt: j.NextAt, LastAt: j.LastAt, CreatedAt: j.CreatedAt}
	return nil
}
