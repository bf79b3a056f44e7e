package cli

import "github.com/nudgehq/nudge/cmd/nudge/api"

// runtimeView is a runtime as the API shows it: its record and its queue depth.
type runtimeView = api.Runtime
