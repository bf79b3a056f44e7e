package api

import "time"

// The small request and answer bodies of the socket API. Their fields are in the order
// the daemon has always sent them (alphabetical, as encoding/json orders a map).

// RegisterRequest is POST /v1/runtimes/register: adopt an existing pane.
type RegisterRequest struct {
	Workspace string `json:"workspace"`
	Role      string `json:"role"`
	Agent     string `json:"agent"`
	AgentID   string `json:"agent_id,omitempty"`
	Target    string `json:"target"`
	SessionID string `json:"session_id,omitempty"`
	Unmanaged bool   `json:"unmanaged,omitempty"`
	Host      string `json:"host,omitempty"` // ssh destination of a new workspace's tmux; "" local
}

// HeartbeatRequest is POST /v1/runtimes/{id}/heartbeat (seed 000 §10.3).
type HeartbeatRequest struct {
	Status         string    `json:"status,omitempty"` // active (""), idle or offline
	LastActivityAt time.Time `json:"last_activity_at,omitzero"`
	Cursor         string    `json:"cursor,omitempty"`
	ThreadID       string    `json:"thread_id,omitempty"`
	SessionID      string    `json:"session_id,omitempty"` // the agent's own session id, once it has one
}

// HeartbeatReply answers a heartbeat.
type HeartbeatReply struct {
	CursorAdvanced  bool      `json:"cursor_advanced"`
	LastHeartbeatAt time.Time `json:"last_heartbeat_at"`
	RuntimeID       string    `json:"runtime_id"`
}

// Deregistered answers DELETE /v1/runtimes/{id}.
type Deregistered struct {
	Deregistered bool   `json:"deregistered"`
	RuntimeID    string `json:"runtime_id"`
}

// ForceRequest is POST /v1/triggers/{id}/force.
type ForceRequest struct {
	Reason string `json:"reason"`
	Intent string `json:"override_intent,omitempty"` // human_override or coordinator_override
}

// UnblockRequest is POST /v1/threads/{id}/unblock: the thread for one agent, or (both
// empty) for every agent of the workspaces the caller administers.
type UnblockRequest struct {
	Workspace string `json:"workspace,omitempty"`
	Agent     string `json:"agent,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// Unblocked answers an unblock.
type Unblocked struct {
	Agents    []string `json:"agents"` // WS/ROLE
	ThreadID  string   `json:"thread_id"`
	Unblocked bool     `json:"unblocked"`
}

// ScheduleRemoved answers DELETE /v1/schedules/{id}.
type ScheduleRemoved struct {
	Removed    bool   `json:"removed"`
	ScheduleID string `json:"schedule_id"`
}

// AuditVerify answers GET /v1/audit?verify=1: whether the hash chain holds.
type AuditVerify struct {
	Error   string `json:"error,omitempty"`
	OK      bool   `json:"ok"`
	Records int    `json:"records"`
}

// TokenRequest is POST /v1/tokens.
type TokenRequest struct {
	Subject    string   `json:"subject"`
	Workspaces []string `json:"workspaces"`
	Verbs      []string `json:"verbs"`
	TTL        string   `json:"ttl,omitempty"` // a Go duration; "" a day
}

// KeyRotated answers POST /v1/tokens/rotate-key.
type KeyRotated struct {
	Rotated bool `json:"rotated"`
}
