package main

import (
	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// The CLI's names for the socket API's bodies (package api holds them).
type (
	spawnBody     = api.SpawnRequest
	registerBody  = api.RegisterRequest
	reasonBody    = api.ReasonRequest
	heartbeatBody = api.HeartbeatRequest
	forceBody     = api.ForceRequest
	unblockBody   = api.UnblockRequest
	scheduleBody  = api.ScheduleRequest
	tailView      = api.Tail
	issueBody     = api.TokenRequest
)

// runtimeView is a runtime as the API shows it: its record and its queue depth.
type runtimeView struct {
	nudge.Runtime
	QueueDepth int `json:"queue_depth"`
}
