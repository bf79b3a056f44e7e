package cli

import "github.com/nudgehq/nudge/cmd/nudge/api"

// The tests' names for the socket API's bodies (package api holds them).
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
