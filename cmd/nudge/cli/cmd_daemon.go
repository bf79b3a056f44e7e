package cli

// Commands about the daemon and access to it: token, mcp, doctor (serve is in
// cmd_serve.go).

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/cmd/nudge/doctor"
	"github.com/nudgehq/nudge/cmd/nudge/flagvals"
	"github.com/nudgehq/nudge/cmd/nudge/mcp"
	"github.com/nudgehq/nudge/cmd/nudge/paths"
	"github.com/nudgehq/nudge/panes"
)

func tokenCmd(env *cliEnv) *cobra.Command {
	return groupCmd("token", "issue, list or revoke API tokens", tokenIssueCmd(env), tokenListCmd(env),
		tokenRevokeCmd(env), tokenRotateCmd(env))
}

func tokenIssueCmd(env *cliEnv) *cobra.Command {
	var b api.TokenRequest
	cmd := &cobra.Command{
		Use:   "issue --subject S --workspace WS --verbs V[,V...] [--ttl 24h]",
		Short: "issue an orchestrator token (printed once, stored nowhere)",
		Long: "Issue a token for --subject that may use --verbs on --workspace. The token goes to stdout and\n" +
			"what it allows to stderr; keep it out of command lines (export NUDGE_TOKEN=...).",
		Example: "  export NUDGE_TOKEN=$(nudge token issue --subject orchestrator --workspace mobile_core --verbs trigger,read)",
		Args:    exactArgs(0, "no arguments"),
	}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "table")
	cmd.Flags().StringVar(&b.Subject, "subject", "", "who the token is for (e.g. orchestrator)")
	cmd.Flags().Var(flagvals.List{V: &b.Workspaces}, "workspace", "workspace it may touch (repeatable or comma-separated; * for all)")
	cmd.Flags().Var(flagvals.List{V: &b.Verbs}, "verbs", "verbs: "+strings.Join(auth.Verbs, ","))
	cmd.Flags().StringVar(&b.TTL, "ttl", auth.DefaultTokenTTL.String(), "lifetime")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		if b.Subject == "" || len(b.Workspaces) == 0 || len(b.Verbs) == 0 {
			return usagef("issue needs --subject, --workspace and --verbs")
		}
		ctx, cancel := shortCtx(cmd.Context())
		defer cancel()
		c := o.client(env)
		defer c.Close()
		rep, err := c.IssueToken(ctx, b)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(env.stdout, rep)
		}
		fmt.Fprintln(env.stdout, rep.Token)
		fmt.Fprintf(env.stderr, "token %s for %s: verbs %s, workspaces %s, expires %s\n", rep.ID, rep.Subject,
			strings.Join(rep.Verbs, ","), strings.Join(rep.Workspaces, ","), rep.Expiry().Local().Format(time.RFC3339))
		return nil
	}
	return cmd
}

func tokenListCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "list issued tokens (never the tokens themselves)", Args: exactArgs(0, "no arguments")}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "table")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		ctx, cancel := shortCtx(cmd.Context())
		defer cancel()
		c := o.client(env)
		defer c.Close()
		list, err := c.Tokens(ctx)
		if err != nil {
			return err
		}
		return printTokens(env.stdout, asJSON, list...)
	}
	return cmd
}

func tokenRevokeCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{Use: "revoke TOKEN_ID", Short: "revoke an issued token", Args: exactArgs(1, "one TOKEN_ID")}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "json")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		ctx, cancel := shortCtx(cmd.Context())
		defer cancel()
		c := o.client(env)
		defer c.Close()
		t, err := c.RevokeToken(ctx, args[0])
		if err != nil {
			return err
		}
		return printTokens(env.stdout, asJSON, t)
	}
	return cmd
}

func tokenRotateCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{Use: "rotate-key", Short: "replace the signing key: every token issued so far stops working", Args: exactArgs(0, "no arguments")}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "json")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		ctx, cancel := shortCtx(cmd.Context())
		defer cancel()
		c := o.client(env)
		defer c.Close()
		k, err := c.RotateKey(ctx)
		if err != nil {
			return err
		}
		if !asJSON {
			_, err = fmt.Fprintln(env.stdout, "token key rotated: every token signed with the previous key is invalid")
			return err
		}
		return printJSON(env.stdout, k)
	}
	return cmd
}

// mcpCmd serves the daemon's API as MCP tools on stdin/stdout (`nudge mcp`), with the
// token the other client commands use.
func mcpCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "serve the API to an MCP host (Model Context Protocol on stdio)",
		Long:  "Serve the daemon's API as MCP tools on stdin/stdout. An MCP host starts it; it takes no arguments.",
		Args:  exactArgs(0, "no arguments (an MCP host starts it and talks on stdin/stdout)"),
	}
	o := addClientFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c := o.client(env)
		defer c.Close()
		// At end of input it answers what it has read, then exits.
		t := mcp.StdioTransport(io.NopCloser(env.stdin), nopWriteCloser{env.stdout})
		if err := mcp.Serve(cmd.Context(), c, version, t); err != nil && cmd.Context().Err() == nil {
			return err
		}
		return nil // the host closed stdin, or stopped us with a signal: a normal end
	}
	return cmd
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// doctorCmd checks what nudge needs (seed 001 §3) on every host in use (this machine, the
// hosts of the daemon's workspaces, and each --host); package doctor has the checks.
func doctorCmd(env *cliEnv) *cobra.Command {
	var hosts []string
	var ssh, sshConfig string
	cmd := &cobra.Command{
		Use:   "doctor [--host USER@HOST]...",
		Short: "check tmux >= 3.2, the agent CLIs, permissions, ssh hosts and the daemon",
		Long: "Check what nudge needs on every host in use (this machine, the hosts of the daemon's\n" +
			"workspaces, and each --host): ssh reaches it, tmux there is new enough, and the programs its\n" +
			"runtimes launch are on its PATH; and on this machine the agent CLIs of the known profiles,\n" +
			"the state and socket permissions, the profile and pack override directories, and whether\n" +
			"the daemon answers. When a daemon answers, the state dir and override directories checked\n" +
			"are the ones it uses (those given with a flag are checked as given). Each line is ok, warn or\n" +
			"FAIL with what to do; exits 1 if a check failed.",
		Args: exactArgs(0, "no arguments"),
	}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "table")
	t := addTmuxFlags(cmd.Flags())
	fs := cmd.Flags()
	fs.Var(flagvals.List{V: &hosts}, "host", "also check this host (USER@HOST or an ssh config alias; repeatable)")
	fs.StringVar(&ssh, "ssh", panes.DefaultConfig().SSH, "ssh binary")
	fs.StringVar(&sshConfig, "ssh-config", "", "ssh config file (ssh -F); default: the user's own")
	profileDir, packDir := paths.OverrideDirs()
	fs.StringVar(&profileDir, "profile-dir", profileDir, "profile override directory to check (as serve --profile-dir); without it, a running daemon's own")
	fs.StringVar(&packDir, "pack-dir", packDir, "pack override directory to check (as serve --pack-dir); without it, a running daemon's own")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		c := o.client(env)
		defer c.Close()
		dc := doctor.Config{SSH: ssh, SSHConfig: sshConfig, Tmux: t.tmux, JSON: asJSON,
			Out: env.stdout, StateDir: o.stateDir, ProfileDir: profileDir, PackDir: packDir, Hosts: hosts}
		dc.Given.StateDir, dc.Given.ProfileDir, dc.Given.PackDir = fs.Changed("state-dir"), fs.Changed("profile-dir"), fs.Changed("pack-dir")
		return doctor.Check(cmd.Context(), c, dc)
	}
	return cmd
}
