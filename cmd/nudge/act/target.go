package act

import (
	"context"
	"slices"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
)

// CheckTarget refuses, before anything is sent (and so stored), a trigger to an agent no
// runtime of the workspace answers to, naming those a typo away: the daemon would store it
// and fail it as UNMANAGED_RUNTIME (fallback required). It checks only what the caller
// may list: a caller that sees no runtime at all (a token that may trigger but not read),
// or none of the workspace and no workspace near its name, leaves the answer to the daemon.
func CheckTarget(ctx context.Context, c *api.Client, ws, agent string) error {
	rts, err := c.Runtimes(ctx, "")
	if err != nil || len(rts) == 0 {
		return nil
	}
	var wss, names []string
	for _, rt := range rts {
		if rt.Status == nudge.StatusDeregistered {
			continue
		}
		if rt.WorkspaceID != ws {
			wss = append(wss, rt.WorkspaceID)
			continue
		}
		if rt.Role == agent || rt.AgentID == agent {
			return nil
		}
		names = append(names, rt.Role)
		if rt.AgentID != rt.Role {
			names = append(names, rt.AgentID)
		}
	}
	slices.Sort(wss)
	wss = slices.Compact(wss)
	msg := "no runtime of workspace " + ws + " answers to --agent " + agent + nudge.Suggest(agent, names)
	if len(names) == 0 {
		// A workspace the caller sees nothing of may be one it may not see: only a typo of
		// one it sees is refused here; the daemon answers the rest (FORBIDDEN, or a receipt).
		near := nudge.Suggest(ws, wss)
		if near == "" {
			return nil
		}
		msg = "no runtime in workspace " + ws + near
	}
	return &api.Error{ErrorCode: nudge.UnmanagedRuntime, Message: tui.Printable(msg) +
		": nothing was sent. `nudge ls` lists the runtimes; `nudge spawn` starts one"}
}
