package panes

import (
	"context"
	"errors"
	"strconv"

	"github.com/nudgehq/nudge"
)

// AsideMarker is put between a runtime's role and a suffix to name the runtime that a
// fallback spawns beside it: ROLE-fb-SUFFIX.
const AsideMarker = "-fb-"

// spawnAside is Registry.SpawnAside.
func (l *launcher) spawnAside(ctx context.Context, from nudge.Runtime, resume bool) (nudge.Runtime, error) {
	prof, ok := l.cfg.Profiles[from.Agent]
	if !ok {
		return nudge.Runtime{}, nudge.NewError(nudge.SpawnFailed, "unknown agent profile "+from.Agent)
	}
	var argv []string
	session := ""
	if resume {
		if argv = prof.ResumeLiveArgv(from.SessionID); argv == nil {
			return nudge.Runtime{}, nudge.NewError(nudge.SpawnFailed, "profile "+from.Agent+" cannot resume session "+from.SessionID)
		}
		session = from.SessionID
	}
	dir := from.Dir
	if _, err := l.resolveDir(dir); err != nil {
		dir = "" // an adopted pane's directory may lie outside the roots: the first root
	}
	role := from.Role
	suffix := AsideMarker + strconv.FormatInt(l.cfg.Now().UnixNano()%(36*36*36*36*36), 36)
	if len(role)+len(suffix) > 64 {
		role = role[:64-len(suffix)]
	}
	rt, err := l.spawn(ctx, SpawnRequest{Workspace: from.WorkspaceID, Role: role + suffix, Agent: from.Agent,
		AgentID: from.AgentID, Dir: dir, Argv: argv, SessionID: session})
	if err != nil {
		var ne *nudge.Error
		if errors.As(err, &ne) && ne.Code == nudge.SpawnFailed {
			return nudge.Runtime{}, err
		}
		return nudge.Runtime{}, nudge.NewError(nudge.SpawnFailed, err.Error())
	}
	return rt, nil
}
