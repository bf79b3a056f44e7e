package main

import (
	"context"
	"net/http"
)

// Temporary until the observability work lands (status table, watch TUI, tail, metrics).

func runStatus(ctx context.Context, env *cliEnv, args []string) error { return runLs(ctx, env, args) }
func runWatch(ctx context.Context, env *cliEnv, args []string) error  { return usagef("not yet") }
func runTail(ctx context.Context, env *cliEnv, args []string) error   { return usagef("not yet") }
func runToken(ctx context.Context, env *cliEnv, args []string) error  { return usagef("not yet") }
func runSchedule(ctx context.Context, env *cliEnv, args []string) error {
	return usagef("not yet")
}
func (d *daemon) handleMetrics(w http.ResponseWriter, r *http.Request)                  {}
func (d *daemon) handleTail(w http.ResponseWriter, r *http.Request, c caller)           {}
func (d *daemon) handleListSchedules(w http.ResponseWriter, r *http.Request, c caller)  {}
func (d *daemon) handleAddSchedule(w http.ResponseWriter, r *http.Request, c caller)    {}
func (d *daemon) handleDeleteSchedule(w http.ResponseWriter, r *http.Request, c caller) {}
