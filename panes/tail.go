package panes

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// Tail reads the last n lines of a runtime's pane over its workspace's control
// connection (joined wrapped lines, trailing blank lines dropped), cleaned for display:
// plain text (nudge.StripANSI) with its secrets masked (nudge.Redact), also a secret split
// across lines.
func (r *Registry) Tail(ctx context.Context, rt nudge.Runtime, n int) ([]string, error) {
	target := rt.PaneID
	if target == "" {
		target = rt.Target
	}
	if target == "" {
		return nil, nudge.NewError(nudge.TargetNotFound, "runtime "+rt.RuntimeID+" has no pane")
	}
	c, err := r.Conn(rt.WorkspaceID)
	if err != nil {
		return nil, err
	}
	q, err := controlmode.Quote(target)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rep, err := c.Do(ctx, "capture-pane -p -J -S -"+strconv.Itoa(n)+" -t "+q)
	if err != nil {
		return nil, err
	}
	lines := make([]string, 0, len(rep.Lines))
	for _, l := range rep.Lines {
		lines = append(lines, strings.TrimRight(nudge.Redact(nudge.StripANSI(l)), " "))
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	// A secret split across lines (a PEM block) is masked as a whole too.
	joined := nudge.Redact(strings.Join(lines, "\n"))
	return strings.Split(joined, "\n"), nil
}
