package inject

import (
	"context"
	"errors"
	"time"

	"github.com/nudgehq/nudge/controlmode"
)

// connRetry is how soon a lane looks again for a control connection that was down.
const connRetry = 100 * time.Millisecond

// connDown reports whether err is about the control connection rather than the pane:
// the workspace has no connection (the daemon has just started, or the connection is
// being redialled), or the connection ended under the command. A *CommandError is tmux's
// answer about the pane; an unsafe or unquotable command line is nudge's own bug; a
// context error is a shutdown.
func connDown(err error) bool {
	var ce *controlmode.CommandError
	switch {
	case err == nil, errors.As(err, &ce),
		errors.Is(err, controlmode.ErrUnsafeCommand), errors.Is(err, controlmode.ErrUnquotable),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return true
}
