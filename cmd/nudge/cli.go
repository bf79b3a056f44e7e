package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nudgehq/nudge"
)

func runSpawn(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("spawn", "[-- ARGV...]", env)
	o := addClientFlags(fs)
	var b spawnBody
	fs.StringVar(&b.Workspace, "workspace", "", "workspace id (session agents_<workspace>)")
	fs.StringVar(&b.Role, "role", "", "role (window name), e.g. reviewer")
	fs.StringVar(&b.Agent, "agent", "codex", "agent profile: codex, claude, opencode, gemini, pi, shell")
	fs.StringVar(&b.AgentID, "agent-id", "", "agent id (default: the role)")
	fs.StringVar(&b.Dir, "dir", "", "working directory (must lie under a --root of the daemon)")
	fs.StringVar(&b.SessionID, "session-id", "", "the agent's session id, if known (for resume)")
	fs.StringVar(&b.PromptFile, "prompt-file", "", "file holding a first task prompt (never passed through a shell)")
	fs.StringVar(&b.Host, "host", "", "run a new workspace's tmux on USER@HOST (or an ssh config alias) through ssh -T; default: the workspace's host, this machine for a new one")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if b.Workspace == "" || b.Role == "" {
		return usagef("--workspace and --role are required")
	}
	b.Argv = fs.Args()
	if b.Dir != "" {
		abs, err := absPath(b.Dir)
		if err != nil {
			return err
		}
		b.Dir = abs
	}
	if b.PromptFile != "" {
		abs, err := absPath(b.PromptFile)
		if err != nil {
			return err
		}
		b.PromptFile = abs
	}
	return o.call(ctx, env, "POST", "/v1/runtimes", b)
}

func runRegister(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("register", "", env)
	o := addClientFlags(fs)
	var b registerBody
	fs.StringVar(&b.Workspace, "workspace", "", "workspace id")
	fs.StringVar(&b.Role, "role", "", "role")
	fs.StringVar(&b.Agent, "agent", "codex", "agent profile")
	fs.StringVar(&b.AgentID, "agent-id", "", "agent id (default: the role)")
	fs.StringVar(&b.Target, "target", "", "the pane: agents_<ws>:<role>.0 or %N")
	fs.StringVar(&b.SessionID, "session-id", "", "the agent's session id, if known")
	fs.BoolVar(&b.Unmanaged, "unmanaged", false, "track only: never inject (UNMANAGED_RUNTIME) or restart")
	fs.StringVar(&b.Host, "host", "", "the pane's tmux is on USER@HOST (through ssh -T); default: the workspace's host, this machine for a new one")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if b.Workspace == "" || b.Role == "" || b.Target == "" {
		return usagef("--workspace, --role and --target are required")
	}
	return o.call(ctx, env, "POST", "/v1/runtimes/register", b)
}

func runTrigger(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("trigger", "PROMPT|-", env)
	o := addClientFlags(fs)
	var req struct {
		TriggerID      string `json:"trigger_id,omitempty"`
		Workspace      string `json:"workspace"`
		Agent          string `json:"agent"`
		ThreadID       string `json:"thread_id,omitempty"`
		Prompt         string `json:"prompt"`
		AckTimeoutMS   int64  `json:"ack_timeout_ms,omitempty"`
		ForceOverride  bool   `json:"force_override,omitempty"`
		Reason         string `json:"reason,omitempty"`
		OverrideIntent string `json:"override_intent,omitempty"`
	}
	var ackTimeout time.Duration
	var wait bool
	var waitFor time.Duration
	fs.StringVar(&req.Workspace, "workspace", "", "workspace id")
	fs.StringVar(&req.Agent, "agent", "", "the agent's role")
	fs.StringVar(&req.TriggerID, "id", "", "trigger id (idempotency key; default: generated)")
	fs.StringVar(&req.ThreadID, "thread", "", "thread id")
	fs.BoolVar(&req.ForceOverride, "force", false, "inject even if a human is at the pane (needs --reason)")
	fs.StringVar(&req.Reason, "reason", "", "why (required with --force)")
	fs.StringVar(&req.OverrideIntent, "intent", "", "with --force: human_override or coordinator_override")
	fs.DurationVar(&ackTimeout, "ack-timeout", 0, "ack timeout for this trigger (default: the daemon's)")
	fs.BoolVar(&wait, "wait", false, "wait for the final receipt")
	fs.DurationVar(&waitFor, "wait-timeout", 2*time.Minute, "with --wait: give up after this long")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || req.Workspace == "" || req.Agent == "" {
		return usagef("want --workspace, --agent and one PROMPT (or - for stdin)")
	}
	req.Prompt = fs.Arg(0)
	if req.Prompt == "-" {
		b, err := io.ReadAll(io.LimitReader(env.stdin, 16<<20))
		if err != nil {
			return fmt.Errorf("read prompt: %w", err)
		}
		req.Prompt = string(b)
	}
	req.AckTimeoutMS = ackTimeout.Milliseconds()
	c := o.client(env)
	var t nudge.Trigger
	if err := c.do(ctx, "POST", "/v1/triggers", req, &t); err != nil {
		return err
	}
	if wait && !t.Closed {
		if err := c.do(ctx, "GET", "/v1/triggers/"+url.PathEscape(t.TriggerID)+"?wait="+waitFor.String(), nil, &t); err != nil {
			return err
		}
	}
	if err := printJSON(env.stdout, t); err != nil {
		return err
	}
	if t.State == "failed" {
		return fmt.Errorf("trigger %s failed: %s %s", t.TriggerID, t.ErrorCode, t.Message)
	}
	return nil
}

func runReceipt(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("receipt", "TRIGGER_ID", env)
	o := addClientFlags(fs)
	wait := fs.Duration("wait", 0, "wait up to this long for the final receipt")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one TRIGGER_ID")
	}
	path := "/v1/triggers/" + url.PathEscape(fs.Arg(0))
	if *wait > 0 {
		path += "?wait=" + wait.String()
	}
	return o.call(ctx, env, "GET", path, nil)
}

func runAck(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("ack", "TRIGGER_ID", env)
	o := addClientFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one TRIGGER_ID")
	}
	return o.call(ctx, env, "POST", "/v1/triggers/"+url.PathEscape(fs.Arg(0))+"/ack", nil)
}

func runHeartbeat(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("heartbeat", "[RUNTIME_ID]", env)
	o := addClientFlags(fs)
	var b heartbeatBody
	fs.StringVar(&b.Status, "status", "active", "active or idle")
	fs.StringVar(&b.Cursor, "cursor", "", "read cursor (an advance acks pending triggers)")
	fs.StringVar(&b.ThreadID, "thread", "", "thread the cursor belongs to")
	fs.StringVar(&b.SessionID, "session-id", "", "the agent's session id (used to resume it)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	id := fs.Arg(0)
	if id == "" {
		id = env.getenv("NUDGE_RUNTIME_ID")
	}
	if id == "" || fs.NArg() > 1 {
		return usagef("want one RUNTIME_ID (or run inside a managed pane)")
	}
	b.LastActivityAt = time.Now()
	return o.call(ctx, env, "POST", "/v1/runtimes/"+url.PathEscape(id)+"/heartbeat", b)
}

func runLs(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("ls", "", env)
	o := addClientFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	ws := fs.String("workspace", "", "only this workspace")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var rts []runtimeView
	path := "/v1/runtimes"
	if *ws != "" {
		path += "?workspace=" + url.QueryEscape(*ws)
	}
	if err := o.client(env).do(ctx, "GET", path, nil, &rts); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(env.stdout, rts)
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	hosts := slices.ContainsFunc(rts, func(rt runtimeView) bool { return rt.Host != "" })
	head := "RUNTIME\tWORKSPACE\tROLE\tAGENT\tPANE\tSTATUS\tREADINESS\tOPERATOR\tINPUT\tQUEUE"
	if hosts {
		head += "\tHOST"
	}
	fmt.Fprintln(tw, head)
	for _, rt := range rts {
		op := "-"
		if rt.OperatorBusy {
			op = "busy"
		}
		status := rt.Status
		switch rt.Breaker { // the circuit breaker after repeated failed triggers
		case "open":
			status += "+cooldown"
		case "half_open":
			status += "+probing"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d", rt.RuntimeID, rt.WorkspaceID, rt.Role, rt.Agent,
			rt.PaneID, status, orDash(string(rt.Readiness)), op, orDash(string(rt.InputLine)), rt.QueueDepth)
		if hosts {
			fmt.Fprintf(tw, "\t%s", orDash(rt.Host))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runtimeCmd(name, method, suffix string) func(context.Context, *cliEnv, []string) error {
	return func(ctx context.Context, env *cliEnv, args []string) error {
		fs := newFlagSet(name, "RUNTIME_ID", env)
		o := addClientFlags(fs)
		reason := fs.String("reason", "", "why (kept in the audit log)")
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usagef("want one RUNTIME_ID")
		}
		path := "/v1/runtimes/" + url.PathEscape(fs.Arg(0)) + suffix
		var body any
		if method == "DELETE" {
			path += "?reason=" + url.QueryEscape(*reason)
		} else if *reason != "" {
			body = reasonBody{Reason: *reason}
		}
		return o.call(ctx, env, method, path, body)
	}
}

func runPause(ctx context.Context, env *cliEnv, args []string) error {
	return runtimeCmd("pause", "POST", "/pause")(ctx, env, args)
}

func runResumeCmd(ctx context.Context, env *cliEnv, args []string) error {
	return runtimeCmd("resume", "POST", "/resume")(ctx, env, args)
}

func runStop(ctx context.Context, env *cliEnv, args []string) error {
	return runtimeCmd("stop", "POST", "/stop")(ctx, env, args)
}

func runRestart(ctx context.Context, env *cliEnv, args []string) error {
	return runtimeCmd("restart", "POST", "/restart")(ctx, env, args)
}

// runForce force-delivers a held trigger (POST /v1/triggers/{id}/force).
func runForce(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("force", "TRIGGER_ID", env)
	o := addClientFlags(fs)
	var b forceBody
	fs.StringVar(&b.Reason, "reason", "", "why the trigger must go now (required; kept in the audit log)")
	fs.StringVar(&b.Intent, "intent", "human_override", "human_override or coordinator_override")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || b.Reason == "" {
		return usagef("want one TRIGGER_ID and --reason")
	}
	return o.call(ctx, env, "POST", "/v1/triggers/"+url.PathEscape(fs.Arg(0))+"/force", b)
}

// runUnblock lifts a loop-guard block of a thread (POST /v1/threads/{id}/unblock).
func runUnblock(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("unblock", "THREAD_ID", env)
	o := addClientFlags(fs)
	var b unblockBody
	fs.StringVar(&b.Workspace, "workspace", "", "workspace id (with --agent; default: every agent's block of the thread)")
	fs.StringVar(&b.Agent, "agent", "", "the agent's role (with --workspace)")
	fs.StringVar(&b.Reason, "reason", "", "why the thread may go on (kept in the audit log)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || (b.Workspace == "") != (b.Agent == "") {
		return usagef("want one THREAD_ID, and --workspace with --agent or neither")
	}
	return o.call(ctx, env, "POST", "/v1/threads/"+url.PathEscape(fs.Arg(0))+"/unblock", b)
}

func runDeregister(ctx context.Context, env *cliEnv, args []string) error {
	return runtimeCmd("deregister", "DELETE", "")(ctx, env, args)
}

func runAudit(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("audit", "", env)
	o := addClientFlags(fs)
	q := url.Values{}
	var trigger, runtime, thread, workspace, since, until string
	fs.StringVar(&trigger, "trigger", "", "only this trigger")
	fs.StringVar(&runtime, "runtime", "", "only this runtime")
	fs.StringVar(&thread, "thread", "", "only this thread")
	fs.StringVar(&workspace, "workspace", "", "only this workspace")
	fs.StringVar(&since, "since", "", "from (RFC 3339 or a duration ago, e.g. 1h)")
	fs.StringVar(&until, "until", "", "to (RFC 3339 or a duration ago)")
	verify := fs.Bool("verify", false, "verify the hash chain of the whole log")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c := o.client(env)
	if *verify {
		var res struct {
			OK      bool   `json:"ok"`
			Records int    `json:"records"`
			Error   string `json:"error"`
		}
		if err := c.do(ctx, "GET", "/v1/audit?verify=1", nil, &res); err != nil {
			return err
		}
		if !res.OK {
			return fmt.Errorf("audit log does NOT verify after %d records: %s", res.Records, res.Error)
		}
		fmt.Fprintf(env.stdout, "audit log verified: %d records, hash chain intact\n", res.Records)
		return nil
	}
	for k, v := range map[string]string{"trigger": trigger, "runtime": runtime, "thread": thread, "workspace": workspace, "since": since, "until": until} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var recs []nudge.AuditRecord
	if err := c.do(ctx, "GET", "/v1/audit?"+q.Encode(), nil, &recs); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(env.stdout, recs)
	}
	for _, r := range recs {
		printAudit(env.stdout, r)
	}
	return nil
}

func printAudit(w io.Writer, r nudge.AuditRecord) {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+printable(v))
		}
	}
	add("trigger", r.TriggerID)
	add("thread", r.ThreadID)
	add("runtime", r.RuntimeID)
	add("subject", r.Subject)
	if r.PeerUID != nil {
		add("uid", itoa(*r.PeerUID))
	}
	add("code", string(r.Code))
	add("reason", r.Reason)
	if len(r.Detail) > 0 && string(r.Detail) != "null" {
		add("detail", compactJSON(r.Detail))
	}
	fmt.Fprintf(w, "%6d %s %-26s %s\n", r.Seq, r.Time.Local().Format("2006-01-02 15:04:05.000"), r.Event, strings.Join(parts, " "))
}

// printable escapes control characters so audit text cannot drive the terminal.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }) < 0 {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

func compactJSON(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// call sends a request and prints the JSON answer.
func (o *clientOpts) call(ctx context.Context, env *cliEnv, method, path string, body any) error {
	var raw json.RawMessage
	if err := o.client(env).do(ctx, method, path, body, &raw); err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		_, err = env.stdout.Write(raw)
		return err
	}
	return printJSON(env.stdout, v)
}

func absPath(p string) (string, error) {
	if strings.HasPrefix(p, "/") {
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return wd + "/" + p, nil
}
