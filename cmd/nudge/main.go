// Command nudge is the nudge daemon (`nudge serve`) and its command-line client.
//
// Every subcommand other than serve, attach and version talks to a running daemon over its
// unix socket (HTTP/1.1 + JSON) through package api's Client. The command tree is in
// cmd_*.go; exit codes: 0 ok, 1 failure, 2 usage.
//
// `nudge serve` is wiring only: serve.go is its configuration (each package's Config from
// its DefaultConfig, the flags bound to their fields), daemon.go opens the packages in
// dependency order on one nudge.Bus, runs, and closes them in reverse (openDaemon, Run,
// Close); each package subscribes to what it reacts to in its own Open, and feed.go puts
// the packages' news on the event stream. The socket API is package server; the root
// package's doc has the map.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/nudgehq/nudge/cmd/nudge/buildinfo"
)

// version may be set at build time with -ldflags "-X main.version=..."; otherwise it is
// the module version and commit Go embedded in the binary (buildinfo).
var version = "dev"

func init() { version = buildinfo.Read(version).Version }

// cliEnv is what a command may use: its streams and environment, so tests run them
// in-process.
type cliEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	env := &cliEnv{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	code := run(ctx, env, os.Args[1:])
	stop()
	os.Exit(code)
}
