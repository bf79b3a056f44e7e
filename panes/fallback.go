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
func (l *launcher) spawnAside(ctx context.Context, from nudge.Runtime, prompt string) (rt nudge.Runtime, given bool, err error) {
	prof, ok := l.cfg.Profiles[from.Agent]
	if !ok {
		return nudge.Runtime{}, false, nudge.NewError(nudge.SpawnFailed, "unknown agent profile "+from.Agent)
	}
	given = prompt != ""
	if _, err := prof.LaunchArgv(nil, prompt); errors.Is(err, ErrNoPromptArg) {
		given, prompt = false, ""
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
	rt, err = l.spawn(ctx, SpawnRequest{Workspace: from.WorkspaceID, Role: role + suffix, Agent: from.Agent,
		AgentID: from.AgentID, Dir: dir, Prompt: prompt})
	if err != nil {
		var ne *nudge.Error
		if errors.As(err, &ne) && ne.Code == nudge.SpawnFailed {
			return nudge.Runtime{}, false, err
		}
		return nudge.Runtime{}, false, nudge.NewError(nudge.SpawnFailed, err.Error())
	}
	return rt, given, nil
}
