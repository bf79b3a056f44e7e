// Package cli is nudge's command line: the cobra command tree (cmd_*.go), its flags,
// usage errors and exit codes (0 ok, 1 failure, 2 usage), and the printers (package tui).
//
// Every subcommand other than serve, attach and version talks to a running daemon over its
// unix socket (HTTP/1.1 + JSON) through package api's Client. `nudge serve` binds its
// flags to a daemon.Config (daemon.Flags) and runs package daemon: it is the one command
// that imports it.
//
// The package's tests are the end-to-end suite: real daemons (daemon.Open on a private
// tmux server, harness_test.go) driven through the client and the commands in-process.
package cli

import (
	"context"
	"io"
	"os"

	"github.com/nudgehq/nudge/cmd/nudge/buildinfo"
)

// version is the binary's version (Main sets it from the ldflag main.version); otherwise
// the module version and commit Go embedded in the binary (buildinfo).
var version = buildinfo.Read("dev").Version

// cliEnv is what a command may use: its streams and environment, so tests run them
// in-process.
type cliEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

// Main runs the command line args (without the program's name) on the process's own
// streams and environment, for a binary of version v ("dev", or the release's ldflag),
// and returns its exit code. ctx ends on SIGINT or SIGTERM.
func Main(ctx context.Context, v string, args []string) int {
	version = buildinfo.Read(v).Version
	return run(ctx, &cliEnv{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}, args)
}
