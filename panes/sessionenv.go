package panes

import (
	"context"
	"time"

	"github.com/nudgehq/nudge/controlmode"
)

// setSessionEnv is Registry.SetSessionEnv.
func (cs *conns) setSessionEnv(ctx context.Context, ws, name, val string) error {
	conn, err := cs.conn(ws)
	if err != nil {
		return err
	}
	at := cs.placeOf(ws)
	if !at.owned(ws) {
		return nil // a user's own session's environment is the user's (place.go)
	}
	target, err := controlmode.Quote("=" + at.session)
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

// setPaneOption is Registry.SetPaneOption.
func (cs *conns) setPaneOption(ctx context.Context, id, name, val string) error {
	rt, ok := cs.recs.Get(id)
	if !ok || rt.PaneID == "" {
		return nil
	}
	conn, err := cs.conn(rt.WorkspaceID)
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
