package panes

import (
	"context"
	"time"

	"github.com/nudgehq/nudge/controlmode"
)

// SetSessionEnv sets (or with val "" unsets) a variable in the environment of workspace
// ws's session (agents_<ws>), over its control connection: programs started in the
// session from then on see it (the runtime-token renewal uses it).
func (r *Registry) SetSessionEnv(ctx context.Context, ws, name, val string) error {
	conn, err := r.Conn(ws)
	if err != nil {
		return err
	}
	target, err := controlmode.Quote("=" + SessionName(ws))
	if err != nil {
		return err
	}
	cmd := "set-environment -t " + target + " -u " + name
	if val != "" {
		q, err := controlmode.Quote(val)
		if err != nil {
			return err
		}
		cmd = "set-environment -t " + target + " " + name + " " + q
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = conn.Do(ctx, cmd)
	return err
}

// SetPaneOption sets (or with val "" unsets) the user option name (an "@name") of runtime
// id's pane, over its workspace's control connection. Unlike the session environment, a
// pane option reaches no program's environment: only a tmux client that asks for it sees
// it (the runtime-token renewal uses it). A runtime without a pane is not an error.
func (r *Registry) SetPaneOption(ctx context.Context, id, name, val string) error {
	rt, ok := r.Get(id)
	if !ok || rt.PaneID == "" {
		return nil
	}
	conn, err := r.Conn(rt.WorkspaceID)
	if err != nil {
		return err
	}
	target, err := controlmode.Quote(rt.PaneID)
	if err != nil {
		return err
	}
	cmd := "set-option -p -u -t " + target + " " + name
	if val != "" {
		q, err := controlmode.Quote(val)
		if err != nil {
			return err
		}
		cmd = "set-option -p -t " + target + " " + name + " " + q
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = conn.Do(ctx, cmd)
	return err
}
