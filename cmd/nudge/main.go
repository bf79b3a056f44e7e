// Command nudge is the nudge daemon (`nudge serve`) and its command-line client. It only
// wires: the command line is package cli, the daemon package daemon.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/nudgehq/nudge/cmd/nudge/cli"
)

// version may be set at build time with -ldflags "-X main.version=..."; otherwise it is
// the module version and commit Go embedded in the binary.
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, version, os.Args[1:])
	stop()
	os.Exit(code)
}
