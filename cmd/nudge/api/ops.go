package api

// The operations beyond runtimes and triggers: adopting a pane, heartbeats, forcing a held
// trigger, unblocking a thread, the audit log, schedules and tokens. Their records mirror
// what the daemon answers, field for field, in the order it sends them (the server
// encodes these very types; the wire golden tests pin the bytes).

import (
	"context"
	"net/url"
	"strconv"
	"time"

	"github.com/nudgehq/nudge"
)

// RegisterRequest is POST /v1/runtimes/register: adopt an existing tmux pane.
type RegisterRequest struct {
	Workspace string `json:"workspace"`
	Role      string `json:"role"`
	Agent     string `json:"agent"`
	AgentID   string `json:"agent_id,omitempty"`
	Target    string `json:"target"` // SESSION:WINDOW.PANE, SESSION (its active pane) or %N
	SessionID string `json:"session_id,omitempty"`
	Unmanaged bool   `json:"unmanaged,omitempty"` // track only: never inject or restart
	Host      string `json:"host,omitempty"`
	// TmuxSocket is the pane's tmux server when it is not nudge's own: a socket name
	// (tmux -L; "default" is the server a plain `tmux` uses) or an absolute socket path
	// (tmux -S). "" means the workspace's server (nudge's own for a new workspace).
	TmuxSocket string `json:"tmux_socket,omitempty"`
	// The seeds' names (seed 000 §10.1): workspace_id for workspace, pty_target for
	// target, pty_backend (only "tmux"), and pid, the pane's process id as the caller knows
	// it (the register is refused if the pane runs another). A register with agent_id and
	// no role takes the agent_id as the role.
	WorkspaceID string `json:"workspace_id,omitempty"`
	PTYBackend  string `json:"pty_backend,omitempty"`
	PTYTarget   string `json:"pty_target,omitempty"`
	PID         int    `json:"pid,omitempty"`
}

// Normalize takes the seeds' field names into the ones the daemon uses.
func (b *RegisterRequest) Normalize() error {
	if b.PTYBackend != "" && b.PTYBackend != "tmux" {
		return &Error{ErrorCode: nudge.BadRequest, Message: "pty_backend " + b.PTYBackend + ": this daemon drives tmux only (pty_backend tmux, or leave it out)"}
	}
	if b.PID < 0 {
		return &Error{ErrorCode: nudge.BadRequest, Message: "pid must be positive"}
	}
	if b.Role == "" {
		b.Role = b.AgentID
	}
	if err := alias(&b.Workspace, b.WorkspaceID, "workspace", "workspace_id"); err != nil {
		return err
	}
	return alias(&b.Target, b.PTYTarget, "target", "pty_target")
}

// Deregistered is the answer of DELETE /v1/runtimes/{id}.
type Deregistered struct {
	Deregistered bool   `json:"deregistered"`
	RuntimeID    string `json:"runtime_id"`
}

// HeartbeatRequest is POST /v1/runtimes/{id}/heartbeat (seed 000 §10.3).
type HeartbeatRequest struct {
	Status         string    `json:"status"` // active or idle
	LastActivityAt time.Time `json:"last_activity_at"`
	Cursor         string    `json:"cursor"` // read cursor; an advance acks pending triggers
	ThreadID       string    `json:"thread_id"`
	SessionID      string    `json:"session_id,omitempty"` // the agent's own session id, for resume
}

// HeartbeatReply is the answer to a heartbeat.
type HeartbeatReply struct {
	CursorAdvanced  bool      `json:"cursor_advanced"`
	LastHeartbeatAt time.Time `json:"last_heartbeat_at"`
	RuntimeID       string    `json:"runtime_id"`
}

// PermissionRequest is POST /v1/runtimes/{id}/permission: a permission the agent asks of
// its operator, as its own hook states it (Claude Code's PermissionRequest hook, through
// `nudge hook claude-permission`). Only the runtime's own token may post it; the answer
// comes when nudge answers the dialog the agent shows for it (or never: an empty one).
type PermissionRequest struct {
	SessionID string `json:"session_id,omitempty"`
	Tool      string `json:"tool_name"`
	Command   string `json:"command,omitempty"` // what a Bash tool asks to run
	Cwd       string `json:"cwd,omitempty"`
}

// PermissionDecision is the answer to a PermissionRequest: behavior "allow" or "deny"
// (message: the operator's reason), or "" (no answer: the agent's own dialog decides).
type PermissionDecision struct {
	Behavior string `json:"behavior,omitempty"`
	Message  string `json:"message,omitempty"`
}

// Permission posts a permission request of runtime id and waits for its answer.
func (c *Client) Permission(ctx context.Context, id string, req PermissionRequest) (PermissionDecision, error) {
	var d PermissionDecision
	return d, c.Do(ctx, "POST", "/v1/runtimes/"+url.PathEscape(id)+"/permission", req, &d)
}

// ForceRequest is POST /v1/triggers/{id}/force: deliver a held trigger now.
type ForceRequest struct {
	Reason string `json:"reason"`
	Intent string `json:"override_intent"` // human_override or coordinator_override
}

// UnblockRequest is POST /v1/threads/{id}/unblock: lift a loop-guard block. Workspace and
// Agent together name one agent's block; both "" lift every agent's block of the thread.
type UnblockRequest struct {
	Workspace string `json:"workspace"`
	Agent     string `json:"agent"`
	Reason    string `json:"reason"`
}

// Unblocked is the answer to an unblock.
type Unblocked struct {
	Agents    []string `json:"agents"`
	ThreadID  string   `json:"thread_id"`
	Unblocked bool     `json:"unblocked"`
}

// AuditFilter selects audit records for GET /v1/audit. Since and Until are RFC 3339 times
// or durations ago ("1h").
type AuditFilter struct {
	TriggerID, RuntimeID, ThreadID, Workspace, Event string
	Since, Until                                     string
	Host                                             string // another fleet host's records, as the hub keeps them (ask the hub)
	Newest                                           bool   // the newest Limit, not the oldest
	Limit                                            int
}

// AuditVerified is the answer of GET /v1/audit?verify=1.
type AuditVerified struct {
	Error   string `json:"error,omitempty"`
	OK      bool   `json:"ok"`
	Records int    `json:"records"`
	// ArchivedThrough is the last record sealed out of the store by retention (0: none);
	// the records checked start after it.
	ArchivedThrough uint64 `json:"archived_through,omitempty"`
	// Archived is the number of sealed records checked in the archive (archive=1 only).
	Archived int `json:"archived,omitempty"`
}

// ScheduleRemoved is the answer of DELETE /v1/schedules/{id}.
type ScheduleRemoved struct {
	Removed    bool   `json:"removed"`
	ScheduleID string `json:"schedule_id"`
}

// TokenRequest is POST /v1/tokens.
type TokenRequest struct {
	Subject    string   `json:"subject"`
	Workspaces []string `json:"workspaces"`
	Verbs      []string `json:"verbs"`
	TTL        string   `json:"ttl"` // a Go duration; "" the daemon's default
}

// TokenInfo is an issued token as GET /v1/tokens lists it: its claims, never the token.
type TokenInfo struct {
	ID         string    `json:"jti"`
	Subject    string    `json:"sub"`
	Workspaces []string  `json:"ws"`
	Verbs      []string  `json:"verbs"`
	RuntimeID  string    `json:"rt,omitempty"`
	Epoch      string    `json:"rte,omitempty"`
	IssuedAt   int64     `json:"iat"` // unix seconds
	ExpiresAt  int64     `json:"exp"` // unix seconds
	Revoked    bool      `json:"revoked,omitempty"`
	RevokedAt  time.Time `json:"revoked_at,omitzero"`
	IssuedBy   string    `json:"issued_by"`
}

// Expiry is when the token stops working.
func (t TokenInfo) Expiry() time.Time { return time.Unix(t.ExpiresAt, 0) }

// IssuedToken is the answer of POST /v1/tokens: the token, shown once and stored nowhere.
type IssuedToken struct {
	Token string `json:"token"`
	TokenInfo
}

// KeyRotated is the answer of POST /v1/tokens/rotate-key.
type KeyRotated struct {
	Rotated bool `json:"rotated"`
}

// Register adopts an existing tmux pane as a runtime.
func (c *Client) Register(ctx context.Context, req RegisterRequest) (Runtime, error) {
	var rt Runtime
	return rt, c.Do(ctx, "POST", "/v1/runtimes/register", req, &rt)
}

// Deregister stops tracking a runtime, leaving its pane; reason goes to the audit log.
func (c *Client) Deregister(ctx context.Context, id, reason string) (Deregistered, error) {
	var d Deregistered
	return d, c.Do(ctx, "DELETE", "/v1/runtimes/"+url.PathEscape(id)+"?reason="+url.QueryEscape(reason), nil, &d)
}

// Heartbeat reports a runtime's activity (and read cursor).
func (c *Client) Heartbeat(ctx context.Context, id string, req HeartbeatRequest) (HeartbeatReply, error) {
	var h HeartbeatReply
	return h, c.Do(ctx, "POST", "/v1/runtimes/"+url.PathEscape(id)+"/heartbeat", req, &h)
}

// Force delivers a held trigger now.
func (c *Client) Force(ctx context.Context, id string, req ForceRequest) (Trigger, error) {
	var t Trigger
	return t, c.Do(ctx, "POST", "/v1/triggers/"+url.PathEscape(id)+"/force", req, &t)
}

// Unblock lifts a loop-guard block of a thread.
func (c *Client) Unblock(ctx context.Context, thread string, req UnblockRequest) (Unblocked, error) {
	var u Unblocked
	return u, c.Do(ctx, "POST", "/v1/threads/"+url.PathEscape(thread)+"/unblock", req, &u)
}

// AuditLog returns the audit records f selects (all the caller may see for a zero f).
func (c *Client) AuditLog(ctx context.Context, f AuditFilter) ([]AuditRecord, error) {
	q := url.Values{}
	for k, v := range map[string]string{"trigger": f.TriggerID, "runtime": f.RuntimeID, "thread": f.ThreadID,
		"workspace": f.Workspace, "event": f.Event, "since": f.Since, "until": f.Until, "host": f.Host} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Newest {
		q.Set("newest", "1")
	}
	out := []AuditRecord{}
	return out, c.Do(ctx, "GET", "/v1/audit?"+q.Encode(), nil, &out)
}

// VerifyAudit checks the hash chain of the audit log the store keeps (from its first
// kept record on) and, with archive, of the sealed segments before it too.
func (c *Client) VerifyAudit(ctx context.Context, archive bool) (AuditVerified, error) {
	var v AuditVerified
	path := "/v1/audit?verify=1"
	if archive {
		path += "&archive=1"
	}
	return v, c.Do(ctx, "GET", path, nil, &v)
}

// RemoveSchedule removes a periodic prompt.
func (c *Client) RemoveSchedule(ctx context.Context, id string) (ScheduleRemoved, error) {
	var r ScheduleRemoved
	return r, c.Do(ctx, "DELETE", "/v1/schedules/"+url.PathEscape(id), nil, &r)
}

// IssueToken mints an orchestrator token (admin).
func (c *Client) IssueToken(ctx context.Context, req TokenRequest) (IssuedToken, error) {
	var t IssuedToken
	return t, c.Do(ctx, "POST", "/v1/tokens", req, &t)
}

// Tokens lists the issued tokens the caller may see.
func (c *Client) Tokens(ctx context.Context) ([]TokenInfo, error) {
	out := []TokenInfo{}
	return out, c.Do(ctx, "GET", "/v1/tokens", nil, &out)
}

// RevokeToken revokes an issued token.
func (c *Client) RevokeToken(ctx context.Context, id string) (TokenInfo, error) {
	var t TokenInfo
	return t, c.Do(ctx, "DELETE", "/v1/tokens/"+url.PathEscape(id), nil, &t)
}

// RotateKey replaces the signing key: every token signed before stops working.
func (c *Client) RotateKey(ctx context.Context) (KeyRotated, error) {
	var k KeyRotated
	return k, c.Do(ctx, "POST", "/v1/tokens/rotate-key", nil, &k)
}
