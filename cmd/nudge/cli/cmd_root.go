package cli

// The command tree (github.com/spf13/cobra, the convention of kubectl, docker and gh):
// flags anywhere on the line, --help on every command, `nudge help CMD`, shell completion.
// What nudge adds on top: every flag not given is read from NUDGE_<FLAG>; usage errors
// exit 2 and failures 1; client commands share --socket/--token/--state-dir and, where
// they print records, -o json|table.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/act"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/cmd/nudge/buildinfo"
	"github.com/nudgehq/nudge/cmd/nudge/demoagent"
	"github.com/nudgehq/nudge/cmd/nudge/dialogs"
	"github.com/nudgehq/nudge/cmd/nudge/paths"
	"github.com/nudgehq/nudge/cmd/nudge/permhook"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
)

// commandGroups are the sections of `nudge --help`, in order.
var commandGroups = []*cobra.Group{
	{ID: "agents", Title: "Runtimes (agents in tmux panes):"},
	{ID: "triggers", Title: "Triggers (prompts and their receipts):"},
	{ID: "operator", Title: "Operators:"},
	{ID: "daemon", Title: "The daemon and its access:"},
}

// newRootCmd builds the whole command tree on env's streams.
func newRootCmd(env *cliEnv) *cobra.Command {
	root := &cobra.Command{
		Use:   "nudge",
		Short: "wake live AI coding agents in tmux: fast, safe, with receipts",
		Long: "nudge wakes live AI coding agents in tmux: fast, safe, with receipts.\n\n" +
			"Every command but serve, attach and version talks to a running daemon (`nudge serve`)\n" +
			"over its unix socket. Every setting flag is also read from NUDGE_<FLAG> (dashes become\n" +
			"underscores) when it is not given; a call's own values (--id, --thread, --reason, ...) never\n" +
			"are. Exit codes: 0 the state asked for was reached, 1 failed or refused, 2 usage,\n" +
			"3 still pending when the wait ended.\n\n" +
			"Output: commands that list or show records print a table (-o json: JSON); commands that act\n" +
			"(spawn, register, trigger, pause, resume, stop, restart) print a short line on a terminal and\n" +
			"the record as JSON when stdout is a pipe or a file (-o table|json picks either).",
		Version:           version,
		Args:              noSubcommand,
		RunE:              func(cmd *cobra.Command, _ []string) error { cmd.Help(); return &usageError{} }, //nolint:errcheck // help to a writer
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return envFallback(cmd, env) },
		SilenceErrors:     true,
		SilenceUsage:      true,
		// Suggest commands a typo away (cobra's own default, which SuggestionsFor lacks).
		SuggestionsMinimumDistance: 2,
	}
	root.SetVersionTemplate("nudge {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err.Error()} })
	root.AddGroup(commandGroups...)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	acts := actCLI(env)
	add("agents", spawnCmd(env), registerCmd(env), lsCmd(env), statusCmd(env), tailCmd(env), heartbeatCmd(env),
		act.ActionCommand(acts, "pause", "hold triggers for a runtime until resume"),
		act.ActionCommand(acts, "resume", "let a paused runtime's triggers go"), act.StopCommand(acts),
		act.ActionCommand(acts, "restart", "start a runtime's program again (after failed or exited)"),
		deregisterCmd(env))
	add("triggers", act.TriggerCommand(acts), receiptCmd(env), ackCmd(env), forceCmd(env), unblockCmd(env), act.ScheduleCommand(acts), act.UnreadCommand(acts), auditCmd(env),
		eventsCmd(env))
	add("operator", append([]*cobra.Command{watchCmd(env), attachCmd(env), switchCmd(env)}, dialogs.Commands(dialogs.CLI{Usage: usagef, Stdout: env.stdout,
		WithClient: func(c *cobra.Command) func() *api.Client {
			o := addClientFlags(c)
			return func() *api.Client { return o.client(env) }
		}})...)...)
	add("daemon", serveCmd(env), serviceCmd(env), tokenCmd(env), act.WebCommand(acts), mcpCmd(env), doctorCmd(env), versionCmd(env))
	root.AddCommand(demoagent.Command(usagef))
	root.AddCommand(permhook.HookCommand(permhook.HookCLI{Getenv: env.getenv, Stdin: env.stdin, Stdout: env.stdout,
		Client: func() *api.Client { return (&clientOpts{}).client(env) }}))
	root.SetHelpCommandGroupID("daemon")
	root.SetCompletionCommandGroupID("daemon")
	root.SetIn(env.stdin)
	root.SetOut(env.stdout)
	root.SetErr(env.stderr)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd() // after SetOut: its scripts go to the writer it sees now
	strictHelp(root)
	addCompletions(root, env)
	return root
}

// run executes the CLI with args (without the program name) and returns the exit code.
func run(ctx context.Context, env *cliEnv, args []string) int {
	root := newRootCmd(env)
	if cmd, err := unknownCommand(root, args); err != nil {
		return exitCode(env.stderr, cmd, err)
	}
	root.SetArgs(singleDashLong(root, args))
	cmd, err := root.ExecuteContextC(ctx)
	return exitCode(env.stderr, cmd, err)
}

// unknownCommand refuses a word that names no subcommand of a command that only groups
// others, --help or not: cobra would print the group's help for `nudge bogus --help` and
// exit 0, as if bogus existed.
func unknownCommand(root *cobra.Command, args []string) (*cobra.Command, error) {
	if len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd) {
		return root, nil // added by cobra when it executes
	}
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == nil || !cmd.HasAvailableSubCommands() {
		return cmd, nil
	}
	for _, a := range rest {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			return cmd, noSubcommand(cmd, []string{a})
		}
	}
	return cmd, nil
}

// strictHelp makes `nudge help TOPIC` a usage error (exit 2) when TOPIC is no command;
// cobra's own prints the root's help and exits 0.
func strictHelp(root *cobra.Command) {
	for _, h := range root.Commands() {
		if h.Name() != "help" {
			continue
		}
		h.Run = nil
		h.RunE = func(_ *cobra.Command, args []string) error {
			cmd, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				return usagef("no help topic %q: see nudge --help", strings.Join(args, " "))
			}
			return cmd.Help()
		}
	}
}

// usageError makes the process exit 2 (a wrong command line); its message, if any, is
// printed with a pointer to the command's --help.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// pendingError: a wait ended before the state it waited for (exit 3); the record was printed.
type pendingError struct{ msg string }

func (e *pendingError) Error() string { return e.msg }

// exitCode prints err for cmd and maps it to the exit code: 0 the state asked for was
// reached, 1 failed or refused, 2 usage, 3 still pending when the wait ended.
func exitCode(stderr io.Writer, cmd *cobra.Command, err error) int {
	name := "nudge"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	var ue *usageError
	var pe *pendingError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &pe):
		fmt.Fprintf(stderr, "%s: %s\n", name, pe.msg)
		return 3
	case errors.As(err, &ue):
		if ue.msg != "" {
			fmt.Fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", name, ue.msg, name)
		}
		return 2
	default:
		fmt.Fprintf(stderr, "%s: %v%s\n", name, err, hint(err))
		return 1
	}
}

// hint says what to do about an error the daemon answered, where its message does not.
func hint(err error) string {
	var ae *api.Error
	switch {
	case !errors.As(err, &ae):
	case ae.ErrorCode == nudge.Unauthorized:
		return " (pass a valid token: --token or NUDGE_TOKEN; `nudge token issue` makes one)"
	case ae.ErrorCode == nudge.NotFound && strings.HasPrefix(ae.Message, "no runtime "):
		return " (`nudge ls` lists the runtimes; an id is rt_WORKSPACE.ROLE)"
	case ae.ErrorCode == nudge.NotFound && strings.HasPrefix(ae.Message, "no trigger "):
		return " (`nudge audit` and `nudge status` show recent triggers)"
	}
	return ""
}

// noSubcommand is the Args of a command that only groups others: any argument is an
// unknown subcommand.
func noSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return &usageError{msg}
}

// groupCmd is a command that only holds subcommands: alone it is a usage error.
func groupCmd(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: noSubcommand, SuggestionsMinimumDistance: 2,
		RunE: func(cmd *cobra.Command, _ []string) error {
			names := []string{}
			for _, s := range cmd.Commands() {
				if s.IsAvailableCommand() {
					names = append(names, s.Name())
				}
			}
			return usagef("want a subcommand: %s", strings.Join(names, ", "))
		}}
	c.AddCommand(subs...)
	return c
}

// exactArgs wants n arguments, named by what for the message.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("want %s, got %d argument(s)", what, len(args))
		}
		return nil
	}
}

// perCallFlags are the flags that name one call's own values (a trigger's id, thread,
// reason, prompt file, a forced override, an answer's choice): envFallback never reads
// them from the environment, where one stray `export NUDGE_ID=fixed` would make every
// later trigger reuse that id.
var perCallFlags = map[string]bool{
	"id": true, "thread": true, "reason": true, "prompt-file": true, "force": true,
	"intent": true, "session-id": true, "dialog": true, "choice": true, "tmux-server": true,
}

// envFallback sets every flag of cmd not given on the command line from NUDGE_<FLAG>
// (dashes become underscores), so a wrapper or a pane can set them once; perCallFlags
// are never read from there.
func envFallback(cmd *cobra.Command, env *cliEnv) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed || err != nil || f.Name == "help" || f.Name == "version" || perCallFlags[f.Name] {
			return
		}
		key := "NUDGE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := env.getenv(key); v != "" {
			if e := cmd.Flags().Set(f.Name, v); e != nil {
				err = usagef("%s=%q: %v", key, v, e)
			}
		}
	})
	return err
}

// singleDashLong rewrites -name to --name where name is a long flag of the command args
// name, so command lines written for Go's flag package (`nudge ls -json`) keep working.
// The value of a flag (`--reason -json`) is left as it is.
func singleDashLong(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return args
	}
	lookup := func(name string) *pflag.Flag {
		if f := cmd.LocalFlags().Lookup(name); f != nil {
			return f
		}
		return cmd.InheritedFlags().Lookup(name)
	}
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		if len(a) < 3 || a[0] != '-' {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		f := lookup(name)
		if f == nil {
			continue
		}
		if a[1] != '-' {
			out[i] = "-" + a
		}
		if !hasValue && f.NoOptDefVal == "" {
			i++ // the next word is this flag's value
		}
	}
	return out
}

// clientOpts are the flags every client command shares.
type clientOpts struct {
	socket, stateDir, token string
}

func addClientFlags(cmd *cobra.Command) *clientOpts {
	o := &clientOpts{}
	fs := cmd.Flags()
	fs.StringVar(&o.stateDir, "state-dir", paths.StateDir(), "daemon state directory (used to find the default socket)")
	fs.StringVar(&o.socket, "socket", "", "daemon socket (default $XDG_RUNTIME_DIR/nudge/nudge.sock, else under the state dir)")
	fs.StringVar(&o.token, "token", "", "API token (default $NUDGE_TOKEN, else $NUDGE_RUNTIME_TOKEN inside a managed pane)")
	return o
}

// client is the API client the flags and environment name. The caller closes it.
func (o *clientOpts) client(env *cliEnv) *api.Client {
	sock := o.socket
	if sock == "" {
		sock = env.getenv("NUDGE_SOCKET")
	}
	if sock == "" {
		sock = paths.Socket(o.stateDir)
	}
	tok := o.token
	if tok == "" {
		tok = auth.RuntimeToken(env.getenv)
	}
	// A token read from a file or pasted can carry a line break; the daemon refuses one.
	return api.NewClient(sock, strings.TrimSpace(tok))
}

// outputOpts is -o json|table (and --json, its synonym) of a command that prints records.
type outputOpts struct {
	format string
	json   bool
}

// actCLI is what the commands that act (package act) need from package main.
func actCLI(env *cliEnv) act.CLI {
	return act.CLI{WithClient: func(c *cobra.Command) func() *api.Client {
		o := addClientFlags(c)
		return func() *api.Client { return o.client(env) }
	}, Usage: usagef, Stdout: env.stdout, Stderr: env.stderr, Stdin: env.stdin, Complete: completeRuntimes(env),
		CompleteFirst: firstArg(completeRuntimes(env)), Pending: func(msg string) error { return &pendingError{msg} },
		Args: exactArgs, Group: groupCmd, Output: func(cmd *cobra.Command, def string) func() (bool, error) {
			return addOutputFlags(cmd, def).asJSON
		}}
}

// addActOutputFlags is -o of a command that acts (act.Output).
func addActOutputFlags(cmd *cobra.Command, env *cliEnv) *act.Output {
	return act.AddOutputFlags(cmd, env.stdout, usagef)
}

func addOutputFlags(cmd *cobra.Command, def string) *outputOpts {
	o := &outputOpts{}
	cmd.Flags().StringVarP(&o.format, "output", "o", def, "output format: json or table")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON (same as -o json)")
	return o
}

// asJSON reports whether to print JSON; an unknown format is a usage error.
func (o *outputOpts) asJSON() (bool, error) {
	switch {
	case o.json || o.format == "json":
		return true, nil
	case o.format == "table":
		return false, nil
	}
	return false, usagef("-o %q: want json or table", o.format)
}

// shortCtx bounds one request to the daemon.
func shortCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 30*time.Second)
}

func versionCmd(_ *cliEnv) *cobra.Command {
	cmd := &cobra.Command{Use: "version", Short: "print the version, the commit and the Go it was built with", Args: exactArgs(0, "no arguments")}
	out := addOutputFlags(cmd, "table")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		in := buildinfo.Read(version)
		if asJSON {
			return tui.PrintJSON(cmd.OutOrStdout(), in)
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), in)
		return err
	}
	return cmd
}
