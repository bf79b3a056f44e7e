package main

import (
	"context"
)

// Temporary until the observability work lands (status table, watch TUI, tail, metrics).

func runWatch(ctx context.Context, env *cliEnv, args []string) error { return usagef("not yet") }
