// Package mcp serves nudge to agent orchestrators over the Model Context Protocol: a stdio
// server (`nudge mcp`) whose tools are calls on the daemon's API, made with the caller's
// token. Tool arguments and results use the API's JSON names; a refused call comes back as
// a tool error whose text is the API's error body, {"error_code": ..., "message": ...}.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

const (
	// DefaultWait bounds a trigger's wait_for when no wait is given.
	DefaultWait = 30 * time.Second
	// MaxWait is the longest wait a tool call may ask for (the daemon's own bound).
	MaxWait = 10 * time.Minute
)

// NewServer returns an MCP server whose tools call the daemon through c.
func NewServer(c *api.Client, version string) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "nudge", Title: "nudge: wake AI coding agents in tmux", Version: version},
		&sdk.ServerOptions{Instructions: instructions})
	t := &tools{c: c}
	add(s, "list_runtimes", "List the agent runtimes (tmux panes nudge watches) the caller may see, optionally of one workspace.", t.listRuntimes)
	add(s, "get_runtime", "Show one runtime: its status, readiness, pane and queue depth.", t.getRuntime)
	add(s, "spawn", "Start an agent (codex, claude, gemini, opencode, pi, shell) in a new tmux pane of a workspace.", t.spawn)
	add(s, "stop", "Stop a runtime: C-c, then SIGHUP, SIGTERM and SIGKILL to its processes; fails with STOP_FAILED if they outlive them.", t.stop)
	add(s, "pause", "Pause triggers for a runtime: new triggers wait until resume.", t.pause)
	add(s, "resume", "Resume triggers for a paused runtime.", t.resume)
	add(s, "tail", "Show a runtime's last lines of screen output.", t.tail)
	addTrigger(s, t)
	add(s, "get_trigger", "Get a trigger's receipt; with wait (e.g. \"30s\") hold the answer until it is closed.", t.getTrigger)
	add(s, "ack", "Acknowledge a trigger (the agent took the prompt up).", t.ack)
	add(s, "answer_dialog", "Answer the approval dialog a runtime's agent shows (get_runtime's dialog): choice is an option's key or number, or approve/deny. Typed only if that dialog_id is still on screen (else DIALOG_CHANGED with what is there now; DIALOG_ANSWERED while another answer to it is under way or it was answered and is still shown); the reason goes into the audit log.", t.answerDialog)
	return s
}

// Serve runs the server on transport until the client goes away or ctx ends.
func Serve(ctx context.Context, c *api.Client, version string, transport sdk.Transport) error {
	return NewServer(c, version).Run(ctx, transport)
}

const instructions = `nudge types prompts ("triggers") into AI coding agents running in tmux panes and keeps a receipt for each: queued -> deferred -> injected -> submitted -> acked, or failed with an error_code. Find a runtime with list_runtimes, send with trigger (wait_for "submitted" or "acked" to wait for the receipt, "reply" for the agent's answer), follow with get_trigger, look at the pane with tail.`

func add[In, Out any](s *sdk.Server, name, desc string, fn func(context.Context, In) (Out, error)) {
	sdk.AddTool(s, &sdk.Tool{Name: name, Description: desc}, handler(fn))
}

func handler[In, Out any](fn func(context.Context, In) (Out, error)) sdk.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, Out, error) {
		out, err := fn(context.WithValue(ctx, requestKey{}, req), in)
		if err != nil {
			return nil, out, toolError(err)
		}
		return nil, out, nil
	}
}

// addTrigger registers the trigger tool with wait_for as an enum in its schema.
func addTrigger(s *sdk.Server, t *tools) {
	in, err := jsonschema.For[TriggerArgs](nil)
	if err != nil {
		panic(err) // a static type: fails in every test run, never in production alone
	}
	in.Properties["wait_for"].Enum = []any{string(api.WaitSubmitted), string(api.WaitAcked), string(api.WaitClosed), string(api.WaitReply)}
	sdk.AddTool(s, &sdk.Tool{Name: "trigger", InputSchema: in,
		Description: "Send a prompt to an agent (workspace + agent role) and return its receipt. With wait_for, wait (bounded by wait, default 30s) until the receipt is submitted, acked or closed, or carries the agent's reply (reply: agents whose own session record nudge reads)."},
		handler(t.trigger))
}

// toolError is the API's error body as the text of an MCP tool error.
type toolErr struct{ body api.Error }

func (e *toolErr) Error() string {
	b, _ := json.Marshal(e.body)
	return string(b)
}

func toolError(err error) error {
	var ae *api.Error
	if errors.As(err, &ae) {
		return &toolErr{*ae}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return &toolErr{api.Error{ErrorCode: nudge.Unavailable, Message: err.Error()}}
	}
	return &toolErr{api.Error{ErrorCode: nudge.Internal, Message: err.Error()}}
}

func badRequest(format string, args ...any) error {
	return &api.Error{ErrorCode: nudge.BadRequest, Message: fmt.Sprintf(format, args...)}
}

// tools are the handlers, one API call each (trigger with wait_for: a few).
type tools struct{ c *api.Client }

// callTimeout bounds a call that does not wait on purpose.
const callTimeout = 30 * time.Second

// ListRuntimesArgs are list_runtimes' arguments.
type ListRuntimesArgs struct {
	Workspace string `json:"workspace,omitempty" jsonschema:"only runtimes of this workspace"`
}

// RuntimeList is list_runtimes' result.
type RuntimeList struct {
	Runtimes []api.Runtime `json:"runtimes"`
}

func (t *tools) listRuntimes(ctx context.Context, in ListRuntimesArgs) (RuntimeList, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	rts, err := t.c.Runtimes(ctx, in.Workspace)
	return RuntimeList{Runtimes: rts}, err
}

// RuntimeArgs name one runtime.
type RuntimeArgs struct {
	RuntimeID string `json:"runtime_id" jsonschema:"the runtime id (rt_WORKSPACE.ROLE), from list_runtimes"`
}

func (t *tools) getRuntime(ctx context.Context, in RuntimeArgs) (api.Runtime, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return t.c.Runtime(ctx, in.RuntimeID)
}

// SpawnArgs are spawn's arguments (POST /v1/runtimes).
type SpawnArgs struct {
	Workspace  string   `json:"workspace" jsonschema:"workspace (one tmux session); created if new"`
	Role       string   `json:"role" jsonschema:"the runtime's role in the workspace, e.g. coder; its runtime id is rt_WORKSPACE.ROLE"`
	Agent      string   `json:"agent" jsonschema:"profile: codex, claude, gemini, opencode, pi or shell"`
	AgentID    string   `json:"agent_id,omitempty" jsonschema:"agent id triggers address (default: the role)"`
	Dir        string   `json:"dir,omitempty" jsonschema:"working directory (under the daemon's allowed roots)"`
	SessionID  string   `json:"session_id,omitempty" jsonschema:"the agent's own session id to resume"`
	PromptFile string   `json:"prompt_file,omitempty" jsonschema:"file whose text is the agent's first prompt"`
	Argv       []string `json:"argv,omitempty" jsonschema:"program and arguments instead of the profile's launch command"`
	Host       string   `json:"host,omitempty" jsonschema:"ssh destination of a new workspace's tmux (default: local)"`
}

func (t *tools) spawn(ctx context.Context, in SpawnArgs) (api.Runtime, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*callTimeout)
	defer cancel()
	return t.c.Spawn(ctx, api.SpawnRequest{Workspace: in.Workspace, Role: in.Role, Agent: in.Agent, AgentID: in.AgentID,
		Dir: in.Dir, SessionID: in.SessionID, PromptFile: in.PromptFile, Argv: in.Argv, Host: in.Host})
}

// StopArgs are stop's arguments.
type StopArgs struct {
	RuntimeID string `json:"runtime_id" jsonschema:"the runtime id (rt_WORKSPACE.ROLE), from list_runtimes"`
	Reason    string `json:"reason,omitempty" jsonschema:"why (kept in the audit log)"`
}

func (t *tools) stop(ctx context.Context, in StopArgs) (api.Runtime, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*callTimeout)
	defer cancel()
	return t.c.Stop(ctx, in.RuntimeID, in.Reason)
}

func (t *tools) pause(ctx context.Context, in RuntimeArgs) (api.Runtime, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return t.c.Pause(ctx, in.RuntimeID, "")
}

func (t *tools) resume(ctx context.Context, in RuntimeArgs) (api.Runtime, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return t.c.Resume(ctx, in.RuntimeID, "")
}

// AnswerArgs are answer_dialog's arguments (POST /v1/runtimes/{id}/answer).
type AnswerArgs struct {
	RuntimeID string `json:"runtime_id" jsonschema:"the runtime id (rt_WORKSPACE.ROLE), from list_runtimes"`
	DialogID  string `json:"dialog_id,omitempty" jsonschema:"the dialog's id from get_runtime: answer only if it is still the one on screen"`
	Choice    string `json:"choice" jsonschema:"an option's key or number, or approve or deny"`
	Reason    string `json:"reason" jsonschema:"why (kept in the audit log)"`
}

func (t *tools) answerDialog(ctx context.Context, in AnswerArgs) (api.Answered, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var out api.Answered
	err := t.c.Do(ctx, "POST", "/v1/runtimes/"+url.PathEscape(in.RuntimeID)+"/answer",
		api.AnswerRequest{DialogID: in.DialogID, Choice: in.Choice, Reason: in.Reason}, &out)
	return out, err
}

// TailArgs are tail's arguments.
type TailArgs struct {
	RuntimeID string `json:"runtime_id" jsonschema:"the runtime id (rt_WORKSPACE.ROLE), from list_runtimes"`
	Lines     int    `json:"lines,omitempty" jsonschema:"how many lines (default 200)"`
}

func (t *tools) tail(ctx context.Context, in TailArgs) (api.Tail, error) {
	if in.Lines < 0 {
		return api.Tail{}, badRequest("lines: want a positive number")
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return t.c.Tail(ctx, in.RuntimeID, in.Lines)
}

// TriggerArgs are trigger's arguments: POST /v1/triggers plus how long to wait.
type TriggerArgs struct {
	TriggerID      string `json:"trigger_id,omitempty" jsonschema:"idempotency key: the same id again returns the same trigger (default: generated)"`
	Workspace      string `json:"workspace" jsonschema:"the workspace of the agent"`
	Agent          string `json:"agent" jsonschema:"the agent id (role) to send to"`
	Prompt         string `json:"prompt" jsonschema:"the text to type into the agent"`
	ThreadID       string `json:"thread_id,omitempty" jsonschema:"conversation thread, for loop guards and ordering"`
	AckTimeoutMS   int64  `json:"ack_timeout_ms,omitempty" jsonschema:"how long the agent has to acknowledge, in milliseconds"`
	Reason         string `json:"reason,omitempty" jsonschema:"why (kept in the audit log)"`
	ForceOverride  bool   `json:"force_override,omitempty" jsonschema:"type even when the agent is busy or the operator is typing (needs reason and override_intent)"`
	OverrideIntent string `json:"override_intent,omitempty" jsonschema:"human_override or coordinator_override, with force_override"`
	WaitFor        string `json:"wait_for,omitempty" jsonschema:"wait until the receipt is submitted, acked or closed, or has the agent's reply, before answering"`
	Wait           string `json:"wait,omitempty" jsonschema:"how long wait_for may wait, a Go duration such as 30s (default 30s, at most 10m)"`
}

// TriggerResult is a trigger's receipt and, with wait_for, whether the wait reached it.
type TriggerResult struct {
	api.Trigger
	Reached *bool `json:"reached,omitempty" jsonschema:"with wait_for: whether the receipt reached that state in time"`
}

func (t *tools) trigger(ctx context.Context, in TriggerArgs) (TriggerResult, error) {
	w, wait, err := waitArgs(in.WaitFor, in.Wait)
	if err != nil {
		return TriggerResult{}, err
	}
	sctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	tr, err := t.c.Trigger(sctx, api.TriggerRequest{TriggerID: in.TriggerID, Workspace: in.Workspace, Agent: in.Agent,
		ThreadID: in.ThreadID, Prompt: in.Prompt, AckTimeoutMS: in.AckTimeoutMS, ForceOverride: in.ForceOverride,
		Reason: in.Reason, OverrideIntent: in.OverrideIntent})
	if err != nil || w == "" {
		return TriggerResult{Trigger: tr}, err
	}
	return t.wait(ctx, tr, w, wait)
}

func (t *tools) wait(ctx context.Context, tr api.Trigger, w api.WaitFor, wait time.Duration) (TriggerResult, error) {
	reached := w.ReachedBy(tr)
	if !reached && !w.Over(tr) {
		var err error
		if tr, reached, err = t.c.WaitTrigger(ctx, tr.TriggerID, w, wait, progress(ctx, tr)); err != nil {
			return TriggerResult{Trigger: tr}, err
		}
	}
	return TriggerResult{Trigger: tr, Reached: &reached}, nil
}

// waitArgs checks wait_for and wait.
func waitArgs(waitFor, wait string) (api.WaitFor, time.Duration, error) {
	w := api.WaitFor(waitFor)
	switch w {
	case "", api.WaitSubmitted, api.WaitAcked, api.WaitClosed, api.WaitReply:
	default:
		return "", 0, badRequest("wait_for %q: want submitted, acked, closed or reply", waitFor)
	}
	d := DefaultWait
	if wait != "" {
		var err error
		if d, err = time.ParseDuration(wait); err != nil || d <= 0 {
			return "", 0, badRequest("wait %q: want a positive duration such as 30s", wait)
		}
		if w == "" {
			w = api.WaitClosed
		}
	}
	return w, min(d, MaxWait), nil
}

type requestKey struct{}

// progress returns a function that sends the host an MCP progress notification each time
// a waited-for receipt changes state, if the host asked for progress (a progressToken):
// a long wait then shows where the trigger is, and keeps hosts that reset their tool
// timeout on progress waiting.
func progress(ctx context.Context, first api.Trigger) func(api.Trigger) {
	req, _ := ctx.Value(requestKey{}).(*sdk.CallToolRequest)
	if req == nil || req.Session == nil || req.Params == nil || req.Params.GetProgressToken() == nil {
		return nil
	}
	token, last, n := req.Params.GetProgressToken(), first.State, 0
	return func(t api.Trigger) {
		if t.State == last {
			return
		}
		last, n = t.State, n+1
		_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(n),
			Message: "trigger " + t.TriggerID + " is " + string(t.State)})
	}
}

// GetTriggerArgs are get_trigger's arguments.
type GetTriggerArgs struct {
	TriggerID string `json:"trigger_id" jsonschema:"the trigger's id"`
	WaitFor   string `json:"wait_for,omitempty" jsonschema:"wait until the receipt is submitted, acked or closed"`
	Wait      string `json:"wait,omitempty" jsonschema:"how long to wait, a Go duration such as 30s (default 30s with wait_for; alone: wait until closed)"`
}

func (t *tools) getTrigger(ctx context.Context, in GetTriggerArgs) (TriggerResult, error) {
	w, wait, err := waitArgs(in.WaitFor, in.Wait)
	if err != nil {
		return TriggerResult{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	tr, err := t.c.GetTrigger(cctx, in.TriggerID, 0)
	if err != nil || w == "" {
		return TriggerResult{Trigger: tr}, err
	}
	return t.wait(ctx, tr, w, wait)
}

// AckArgs are ack's arguments.
type AckArgs struct {
	TriggerID string `json:"trigger_id" jsonschema:"the trigger's id"`
}

func (t *tools) ack(ctx context.Context, in AckArgs) (api.Trigger, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return t.c.Ack(ctx, in.TriggerID)
}
