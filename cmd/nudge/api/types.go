// Package api is nudge's external contract on the unix socket: the request, response and
// error records as the daemon sends them, and a Go Client for them. The JSON names are the
// wire format; golden tests pin them against what a real daemon answers.
package api

import (
	"errors"
	"time"

	"github.com/nudgehq/nudge"
)

// Error is the body of every non-2xx answer: {error_code, message}.
type Error struct {
	ErrorCode nudge.Code `json:"error_code"`
	Message   string     `json:"message"`
	cause     error      // ErrUnreachable, for an error the client made itself
}

func (e *Error) Error() string { return string(e.ErrorCode) + ": " + e.Message }

// Unwrap is the error's cause: ErrUnreachable when no daemon answered.
func (e *Error) Unwrap() error { return e.cause }

// ErrUnreachable is the cause of the *Error a call returns when no daemon listens on the
// socket (there is none, or it is not serving): errors.Is(err, api.ErrUnreachable).
var ErrUnreachable = errors.New("no daemon at the socket")

// Health is GET /v1/health.
type Health struct {
	OK        bool      `json:"ok"`
	Runtimes  int       `json:"runtimes"`
	StartedAt time.Time `json:"started_at"`
	Version   string    `json:"version"`
	// Paths are the files and directories the daemon uses (what `nudge doctor` checks),
	// shown only to a caller that may do anything (the daemon's uid without a token, or
	// the shared API token); nil for a token scoped to workspaces, verbs or a runtime.
	Paths *Paths `json:"paths,omitempty"`
	// Tmux is the daemon's tmux: its version and, if any, what nudge does less well on it
	// (controlmode.Caps.Degraded); nil if its version could not be asked.
	Tmux *Tmux `json:"tmux,omitempty"`
	// RecordsUnread names the runtimes whose agent's own session record could not be
	// read (their acks rest on the screen and the marker), and why.
	RecordsUnread map[string]string `json:"records_unread,omitempty"`
}

// Tmux is the version of the daemon's tmux and what is degraded on it (Health).
type Tmux struct {
	Version  string   `json:"version"`
	Degraded []string `json:"degraded,omitempty"`
}

// Paths are where a running daemon keeps its state and reads its overrides (Health).
// Every path is absolute.
type Paths struct {
	StateDir   string `json:"state_dir"`
	Socket     string `json:"socket"`
	Store      string `json:"store"`       // the bbolt file
	ProfileDir string `json:"profile_dir"` // "": none, the built-in profiles only
	PackDir    string `json:"pack_dir"`    // "": none, the built-in packs only
	// StoreWarnSize is serve --store-warn-size: a store file larger than this many
	// bytes is warned about (doctor compares); 0 (absent): no bound.
	StoreWarnSize int64 `json:"store_warn_size,omitempty"`
}

// Runtime is a managed or registered agent runtime as GET /v1/runtimes shows it: the
// record, the depth of its trigger queue, and the seeds' names for where it runs.
type Runtime struct {
	nudge.Runtime
	QueueDepth int `json:"queue_depth"`
	// PTYBackend, PTYTarget and TmuxTarget are the names dashboards built from the seeds
	// read (seed 000 §10.1 pty_backend and pty_target, seed 001 §7.1 tmux_target): the
	// backend (always tmux) and the runtime's target string, session:window.pane.
	PTYBackend string `json:"pty_backend"`
	PTYTarget  string `json:"pty_target"`
	TmuxTarget string `json:"tmux_target"`
}

// NewRuntime is rt as the API shows it, with its queue depth.
func NewRuntime(rt nudge.Runtime, queueDepth int) Runtime {
	return Runtime{Runtime: rt, QueueDepth: queueDepth, PTYBackend: nudge.BackendTmux, PTYTarget: rt.Target, TmuxTarget: rt.Target}
}

// Stray is one pane of GET /v1/unmanaged: a pane in a workspace's session that no runtime
// claims (a window opened there by hand), until `nudge register --target PANE_ID` adopts
// it (panes.Stray).
type Stray struct {
	WorkspaceID string    `json:"workspace_id"`
	Host        string    `json:"host,omitempty"`
	TmuxSession string    `json:"tmux_session"`
	TmuxWindow  string    `json:"tmux_window"`
	WindowIndex int       `json:"window_index"`
	TmuxPane    int       `json:"tmux_pane"`
	PaneID      string    `json:"pane_id"`
	Target      string    `json:"target"`
	Command     string    `json:"command"`
	PID         int       `json:"pid,omitempty"`
	SeenAt      time.Time `json:"seen_at"`
}

// SpawnRequest is POST /v1/runtimes: start an agent in a new pane of a workspace.
type SpawnRequest struct {
	Workspace   string   `json:"workspace"`
	WorkspaceID string   `json:"workspace_id,omitempty"` // the seeds' name for workspace
	Role        string   `json:"role"`
	Agent       string   `json:"agent"`
	AgentID     string   `json:"agent_id,omitempty"`
	Dir         string   `json:"dir,omitempty"`
	SessionID   string   `json:"session_id,omitempty"`
	PromptFile  string   `json:"prompt_file,omitempty"`
	Argv        []string `json:"argv,omitempty"`
	Host        string   `json:"host,omitempty"`
}

// ReasonRequest is the optional body of stop and restart.
type ReasonRequest struct {
	Reason string `json:"reason,omitempty"`
}

// AnswerRequest is POST /v1/runtimes/{id}/answer: the dialog (its dialog_id; "" = the one
// on screen now), the choice (an option's key or 1-based number, or "approve"/"deny") and
// the reason (required: it goes into the audit log).
type AnswerRequest struct {
	DialogID string `json:"dialog_id,omitempty"`
	Choice   string `json:"choice"`
	Reason   string `json:"reason"`
}

// Answered is the answer to POST /v1/runtimes/{id}/answer: the dialog as it was when the
// key went, and the option picked.
type Answered struct {
	RuntimeID string             `json:"runtime_id"`
	Dialog    nudge.Dialog       `json:"dialog"`
	Option    nudge.DialogOption `json:"option"`
}

// Tail is GET /v1/runtimes/{id}/tail: the pane's last lines.
type Tail struct {
	RuntimeID  string    `json:"runtime_id"`
	PaneID     string    `json:"pane_id"`
	Lines      []string  `json:"lines"`
	CapturedAt time.Time `json:"captured_at,omitzero"`
	// PaneGone: the runtime's pane no longer exists (it was stopped, or its pane closed);
	// Lines are the last screen nudge kept of it, captured at CapturedAt (none when the
	// pane closed while no daemon ran).
	PaneGone bool `json:"pane_gone,omitempty"`
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
	// The seeds' names (seed 000 §10.2): workspace_id for workspace, agent_id for agent
	// (a runtime's role or its agent_id). Either spelling; both must agree.
	WorkspaceID string `json:"workspace_id,omitempty"`
	AgentID     string `json:"agent_id,omitempty"`
}

// Normalize takes the seeds' field names into the ones the daemon uses.
func (b *TriggerRequest) Normalize() error {
	if err := alias(&b.Workspace, b.WorkspaceID, "workspace", "workspace_id"); err != nil {
		return err
	}
	return alias(&b.Agent, b.AgentID, "agent", "agent_id")
}

// Normalize takes the seeds' field names into the ones the daemon uses.
func (b *SpawnRequest) Normalize() error {
	return alias(&b.Workspace, b.WorkspaceID, "workspace", "workspace_id")
}

// alias sets *field from the same value under another name; both given and different is
// an error naming them.
func alias(field *string, other, name, otherName string) error {
	switch {
	case other == "" || other == *field:
	case *field == "":
		*field = other
	default:
		return &Error{ErrorCode: nudge.BadRequest, Message: name + " " + *field + " and " + otherName + " " + other + " differ: give one"}
	}
	return nil
}

// Trigger is a trigger and its receipt (POST /v1/triggers, GET /v1/triggers/{id}): the
// daemon's record, whose JSON is the wire format.
type Trigger = nudge.Trigger

// WaitFor names the receipt state a caller waits for.
type WaitFor string

const (
	WaitSubmitted WaitFor = "submitted" // the prompt was submitted to the agent (or acked)
	WaitAcked     WaitFor = "acked"     // the agent acknowledged it
	WaitClosed    WaitFor = "closed"    // no more work will be done for it (acked or failed)
	// WaitReply: the agent's turn that took the prompt ended, its reply is on the
	// receipt (agents whose own record nudge reads) and the receipt is closed; or it
	// failed.
	WaitReply WaitFor = "reply"
)

// ReachedBy reports whether t has reached w. A closed trigger reaches nothing more.
func (w WaitFor) ReachedBy(t Trigger) bool {
	switch w {
	case WaitSubmitted:
		return t.State == nudge.StateSubmitted || t.State == nudge.StateAcked || t.SubmittedAt != nil
	case WaitAcked:
		return t.State == nudge.StateAcked
	case WaitClosed:
		return t.Closed
	case WaitReply:
		// The reply and the ack are read from the same record but written by two hands:
		// a waiter is answered once both are on the receipt, never with a reply on a
		// receipt still "submitted".
		return t.TurnEndedAt != nil && t.Closed
	}
	return false
}

// Known reports whether w is one of the states a caller can wait for.
func (w WaitFor) Known() bool {
	return w == WaitSubmitted || w == WaitAcked || w == WaitClosed || w == WaitReply
}

// Over reports whether t can reach w no more: closed, and for a reply, closed without
// an ack (an acked trigger's reply comes after it closed).
func (w WaitFor) Over(t Trigger) bool {
	if w == WaitReply {
		return t.Closed && t.State != nudge.StateAcked
	}
	return t.Closed
}

// AuditRecord is one entry of the hash-chained audit log (GET /v1/audit).
type AuditRecord = nudge.AuditRecord

// Schedule is a periodic prompt (GET/POST /v1/schedules).
type Schedule = nudge.Schedule

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
