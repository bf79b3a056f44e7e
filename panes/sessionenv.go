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
