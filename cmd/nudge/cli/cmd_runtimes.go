package cli

// Commands on runtimes: spawn, register, ls, tail, heartbeat, pause, resume, stop,
// restart, deregister.

import (
	"cmp"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/act"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
)

func spawnCmd(env *cliEnv) *cobra.Command {
	var b api.SpawnRequest
	cmd := &cobra.Command{
		Use:   "spawn --workspace WS --role ROLE [--agent PROFILE] [flags] [-- ARGV...]",
		Short: "start a managed agent runtime in tmux",
		Long: "Start an agent as the command of window ROLE in session agents_WS on nudge's tmux server.\n" +
			"ARGV after -- replaces the profile's launch command (argv, never a shell string).",
		Example: "  nudge spawn --workspace mobile_core --role reviewer --agent codex --dir ~/src/app\n" +
			"  nudge spawn --workspace demo --role helper --agent demo    # the built-in demo agent",
	}
	o := addClientFlags(cmd)
	out := addActOutputFlags(cmd, env)
	fs := cmd.Flags()
	fs.StringVar(&b.Workspace, "workspace", "", "workspace id (session agents_<workspace>)")
	fs.StringVar(&b.Role, "role", "", "role (window name), e.g. reviewer")
	fs.StringVar(&b.Agent, "agent", "codex", "agent profile: codex, claude, opencode, gemini, pi, shell, demo (a built-in stand-in)")
	fs.StringVar(&b.AgentID, "agent-id", "", "agent id (default: the role)")
	fs.StringVar(&b.Dir, "dir", "", "working directory (must lie under a --root of the daemon)")
	fs.StringVar(&b.SessionID, "session-id", "", "the agent's session id, if known (for resume)")
	fs.StringVar(&b.PromptFile, "prompt-file", "", "file holding a first task prompt (never passed through a shell)")
	fs.StringVar(&b.Host, "host", "", "run a new workspace's tmux on USER@HOST (or an ssh config alias) through ssh -T; default: the workspace's host, this machine for a new one")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		asJSON, err := out.AsJSON()
		if err != nil {
			return err
		}
		if b.Workspace == "" || b.Role == "" {
			return usagef("--workspace and --role are required")
		}
		b.Argv = args
		for _, p := range []*string{&b.Dir, &b.PromptFile} {
			if *p != "" {
				if *p, err = filepath.Abs(*p); err != nil {
					return err
				}
			}
		}
		c := o.client(env)
		defer c.Close()
		rt, err := c.Spawn(cmd.Context(), b)
		if err != nil {
			return err
		}
		return act.PrintRuntime(env.stdout, asJSON, "spawned", rt)
	}
	return cmd
}

func registerCmd(env *cliEnv) *cobra.Command {
	var b api.RegisterRequest
	cmd := &cobra.Command{
		Use:   "register --workspace WS --role ROLE --target PANE [flags]",
		Short: "adopt an existing tmux pane as a runtime",
		Args:  exactArgs(0, "no arguments"),
	}
	o := addClientFlags(cmd)
	out := addActOutputFlags(cmd, env)
	fs := cmd.Flags()
	fs.StringVar(&b.Workspace, "workspace", "", "workspace id")
	fs.StringVar(&b.Role, "role", "", "role")
	fs.StringVar(&b.Agent, "agent", "codex", "agent profile")
	fs.StringVar(&b.AgentID, "agent-id", "", "agent id (default: the role)")
	fs.StringVar(&b.Target, "target", "", "the pane: SESSION:WINDOW.PANE (window by index or name), SESSION (its active pane) or %N")
	fs.StringVar(&b.SessionID, "session-id", "", "the agent's session id, if known")
	fs.BoolVar(&b.Unmanaged, "unmanaged", false, "track only: never inject (UNMANAGED_RUNTIME) or restart")
	fs.StringVar(&b.Host, "host", "", "the pane's tmux is on USER@HOST (through ssh -T); default: the workspace's host, this machine for a new one")
	fs.StringVar(&b.TmuxSocket, "tmux-server", "", "the pane's tmux server when it is not nudge's: \"default\" (the one a plain tmux uses), a socket NAME (tmux -L) or an absolute socket PATH (tmux -S); default: the workspace's server, nudge's own for a new one")
	cmd.Long = "Adopt an existing tmux pane as a runtime. The pane may be in nudge's session agents_<ws> on\n" +
		"nudge's own tmux server, or in a session of your own on any tmux server (--tmux-server):\n" +
		"\n  tmux new -s consilio-ps        # your session, on your default server\n" +
		"  nudge register --workspace consilio --role ps --agent claude --target consilio-ps --tmux-server default\n" +
		"\nThe workspace is then bound to that session: triggers are typed there, human typing is seen\n" +
		"there, and nudge never creates, renames or kills that session or its server (spawn into\n" +
		"such a workspace is refused; stop leaves an unmanaged pane running). A workspace has one\n" +
		"place: register a pane of another session under another workspace name."
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := out.AsJSON()
		if err != nil {
			return err
		}
		if b.Workspace == "" || b.Role == "" || b.Target == "" {
			return usagef("--workspace, --role and --target are required")
		}
		c := o.client(env)
		defer c.Close()
		rt, err := c.Register(cmd.Context(), b)
		if err != nil {
			return err
		}
		return act.PrintRuntime(env.stdout, asJSON, "registered", rt)
	}
	return cmd
}

func lsCmd(env *cliEnv) *cobra.Command {
	var ws string
	var all, unmanaged bool
	cmd := &cobra.Command{Use: "ls [--workspace WS] [--all] [--unmanaged]", Short: "list runtimes", Aliases: []string{"list"}, Args: exactArgs(0, "no arguments"),
		Long: "List the fleet: the runtimes the daemon keeps (a runtime offline, failed or exited for --runtime-retention,\n" +
			"or whose window a human closed twice, is dropped from it). --all adds the dropped ones the store keeps.\n" +
			"The table ends with the panes in the workspaces' sessions that no runtime claims (windows opened\n" +
			"by hand): adopt one with nudge register --target PANE_ID. --unmanaged lists only those.\n" +
			"With the daemon down it lists those its status files (else its store) last held (read-only), says\nsince when, and exits 1."}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "table")
	cmd.Flags().StringVar(&ws, "workspace", "", "only this workspace")
	cmd.Flags().BoolVar(&all, "all", false, "also the runtimes dropped from the fleet (deregistered, collected)")
	cmd.Flags().BoolVar(&unmanaged, "unmanaged", false, "only the panes no runtime claims (windows opened by hand)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		c := o.client(env)
		defer c.Close()
		if unmanaged {
			ps, err := c.Unmanaged(cmd.Context(), ws)
			if err != nil {
				return err
			}
			return tui.PrintUnmanaged(env.stdout, asJSON, time.Now(), ps...)
		}
		list := c.Runtimes
		if all {
			list = c.AllRuntimes
		}
		rts, err := list(cmd.Context(), ws)
		var stale error
		if snap, ok := lastKnown(o.stateDir, err); ok {
			rts, err, stale = []api.Runtime{}, nil, snap.stale()
			for _, r := range tui.LastKnown(snap.Runtimes, nil, ws) {
				rts = append(rts, r.Runtime)
			}
		}
		if err != nil {
			return err
		}
		if asJSON {
			return cmp.Or(printJSON(env.stdout, rts), stale)
		}
		if err := printRuntimes(env.stdout, false, rts...); err != nil || stale != nil {
			return cmp.Or(err, stale)
		}
		ps, err := c.Unmanaged(cmd.Context(), ws)
		if err != nil {
			return nil // a daemon without /v1/unmanaged: the runtimes are the answer
		}
		return tui.PrintUnmanaged(env.stdout, false, time.Now(), ps...)
	}
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func tailCmd(env *cliEnv) *cobra.Command {
	var lines, history int
	cmd := &cobra.Command{
		Use:     "tail RUNTIME_ID [--lines N] [--history N]",
		Short:   "show a runtime's recent output and history",
		Long:    "Show a runtime's last lines of screen output (ANSI stripped, secrets redacted) and its newest state-history records.",
		Example: "  nudge tail rt_mobile_core.reviewer --lines 20",
		Args:    exactArgs(1, "one RUNTIME_ID"),

		ValidArgsFunction: firstArg(completeRuntimes(env)),
	}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "table")
	cmd.Flags().IntVar(&lines, "lines", 40, "output lines to show")
	cmd.Flags().IntVar(&history, "history", 20, "state-history (audit) records to show")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		if lines <= 0 {
			return usagef("--lines must be positive")
		}
		ctx, cancel := shortCtx(cmd.Context())
		defer cancel()
		c := o.client(env)
		defer c.Close()
		id := args[0]
		tv, err := c.Tail(ctx, id, lines)
		if err != nil {
			return err
		}
		var recs []api.AuditRecord
		if history > 0 {
			if recs, err = c.AuditLog(ctx, api.AuditFilter{RuntimeID: id, Limit: history, Newest: true}); err != nil {
				return err
			}
		}
		if asJSON {
			return printJSON(env.stdout, map[string]any{"tail": tv, "history": recs})
		}
		switch {
		case tv.PaneGone && tv.CapturedAt.IsZero():
			fmt.Fprintf(env.stdout, "── %s: its pane is gone, and no screen of it was kept ──\n", tv.RuntimeID)
		case tv.PaneGone:
			fmt.Fprintf(env.stdout, "── %s: its pane is gone; the last screen kept, at %s ──\n", tv.RuntimeID, tv.CapturedAt.Local().Format(time.TimeOnly))
		default:
			fmt.Fprintf(env.stdout, "── %s (%s) output, last %d lines ──\n", tv.RuntimeID, orDash(tv.PaneID), lines)
		}
		for _, l := range tv.Lines {
			fmt.Fprintln(env.stdout, l)
		}
		if history > 0 {
			fmt.Fprintf(env.stdout, "── %s history (newest last) ──\n", tv.RuntimeID)
			for _, r := range recs {
				printAudit(env.stdout, r)
			}
		}
		return nil
	}
	return cmd
}

func heartbeatCmd(env *cliEnv) *cobra.Command {
	var b api.HeartbeatRequest
	cmd := &cobra.Command{
		Use:   "heartbeat [RUNTIME_ID]",
		Short: "report a runtime heartbeat",
		Long:  "Report a runtime's activity. Inside a managed pane RUNTIME_ID defaults to $NUDGE_RUNTIME_ID.",

		ValidArgsFunction: firstArg(completeRuntimes(env)),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("want one RUNTIME_ID (or run inside a managed pane)")
			}
			return nil
		},
	}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "json")
	fs := cmd.Flags()
	fs.StringVar(&b.Status, "status", "active", "active, idle or offline (an offline heartbeat acks nothing)")
	fs.StringVar(&b.Cursor, "cursor", "", "read cursor (an advance acks pending triggers)")
	fs.StringVar(&b.ThreadID, "thread", "", "thread the cursor belongs to")
	fs.StringVar(&b.SessionID, "session-id", "", "the agent's session id (used to resume it)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		id := env.getenv("NUDGE_RUNTIME_ID")
		if len(args) == 1 {
			id = args[0]
		}
		if id == "" {
			return usagef("want one RUNTIME_ID (or run inside a managed pane)")
		}
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		b.LastActivityAt = time.Now()
		c := o.client(env)
		defer c.Close()
		rep, err := c.Heartbeat(cmd.Context(), id, b)
		if err != nil {
			return err
		}
		return tui.PrintRecord(env.stdout, asJSON, rep)
	}
	return cmd
}

func deregisterCmd(env *cliEnv) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "deregister RUNTIME_ID [--reason TEXT]",
		Short: "stop tracking a runtime, leaving its pane",
		Args:  exactArgs(1, "one RUNTIME_ID"),

		ValidArgsFunction: firstArg(completeRuntimes(env)),
	}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "json")
	cmd.Flags().StringVar(&reason, "reason", "", "why (kept in the audit log)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		c := o.client(env)
		defer c.Close()
		rep, err := c.Deregister(cmd.Context(), args[0], reason)
		if err != nil {
			return err
		}
		return tui.PrintRecord(env.stdout, asJSON, rep)
	}
	return cmd
}
