package main

import (
	"github.com/nudgehq/nudge"
)

// runtimeView is a runtime as the API shows it: its record and its queue depth.
type runtimeView struct {
	nudge.Runtime
	QueueDepth int `json:"queue_depth"`
}
