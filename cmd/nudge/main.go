// Command nudge is the nudge daemon (`nudge serve`) and its command-line client.
//
// Every subcommand other than serve, attach and version talks to a running daemon over its
// unix socket (HTTP/1.1 + JSON). Exit codes: 0 ok, 1 failure, 2 usage.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// A command is one subcommand of the CLI.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *cliEnv, args []string) error
}

// cliEnv is what a subcommand may use: its streams and environment, so tests run them
// in-process.
type cliEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

// usageError makes the process exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

func commands() map[string]command {
	list := []command{
		{"serve", "run the daemon", runServe},
		{"spawn", "start a managed agent runtime in tmux", runSpawn},
		{"register", "adopt an existing tmux pane as a runtime", runRegister},
		{"trigger", "deliver a prompt to a live agent", runTrigger},
		{"receipt", "show a trigger's receipt", runReceipt},
		{"ack", "acknowledge a trigger", runAck},
		{"heartbeat", "report a runtime heartbeat", runHeartbeat},
		{"ls", "list runtimes", runLs},
		{"status", "show every runtime's state", runStatus},
		{"tail", "show a runtime's recent output and history", runTail},
		{"audit", "show or verify the audit log", runAudit},
		{"pause", "pause triggers for a runtime", runPause},
		{"resume", "resume triggers for a runtime", runResumeCmd},
		{"stop", "stop a runtime (C-c, then kill-pane)", runStop},
		{"restart", "start a runtime's program again (after failed or exited)", runRestart},
		{"force", "force-deliver a held trigger now (needs --reason)", runForce},
		{"unblock", "lift a loop-guard block of a thread", runUnblock},
		{"deregister", "stop tracking a runtime, leaving its pane", runDeregister},
		{"schedule", "manage periodic prompts", runSchedule},
		{"token", "issue or revoke API tokens", runToken},
		{"watch", "live dashboard", runWatch},
		{"attach", "attach your terminal to a workspace's tmux session", runAttach},
		{"switch", "switch your tmux client to a runtime's pane", runSwitch},
		{"mcp", "serve the API to an MCP host (Model Context Protocol on stdio)", runMCP},
		{"doctor", "check tmux >= 3.2, the agent CLIs, state and socket permissions, overrides, the daemon", runDoctor},
		{"version", "print the version", runVersion},
	}
	m := make(map[string]command, len(list))
	for _, c := range list {
		m[c.name] = c
	}
	return m
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, "nudge wakes live AI coding agents in tmux: fast, safe, with receipts.\n\n")
	fmt.Fprintf(w, "Usage: nudge <command> [flags] [args]\n\nCommands:\n")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-11s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintf(w, "\nRun 'nudge <command> --help' for a command's flags.\n")
}

// run executes the CLI and returns the process exit code.
func run(ctx context.Context, env *cliEnv, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(env.stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" {
		args[0] = "version"
	}
	c, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(env.stderr, "nudge: unknown command %q\n", args[0])
		printUsage(env.stderr)
		return 2
	}
	err := c.run(ctx, env, args[1:])
	return exitCode(env.stderr, c.name, err)
}

func exitCode(stderr io.Writer, name string, err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "nudge %s: %s\n", name, ue.msg)
		return 2
	default:
		fmt.Fprintf(stderr, "nudge %s: %v\n", name, err)
		return 1
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	env := &cliEnv{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	code := run(ctx, env, os.Args[1:])
	stop()
	os.Exit(code)
}

func runVersion(_ context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("version", "", env)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "nudge %s\n", version)
	return nil
}
