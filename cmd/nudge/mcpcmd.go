package main

import (
	"context"
	"io"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/mcp"
)

// runMCP serves the daemon's API as MCP tools on stdin/stdout (`nudge mcp`), with the
// token the other client commands use.
func runMCP(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("mcp", "", env)
	o := addClientFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("mcp takes no arguments (an MCP host starts it and talks on stdin/stdout)")
	}
	c := o.client(env)
	ac := api.NewClient(c.socket, c.token)
	defer ac.Close()
	t := &sdk.IOTransport{Reader: io.NopCloser(env.stdin), Writer: nopWriteCloser{env.stdout}}
	return mcp.Serve(ctx, ac, version, t)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
