package panes

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// tail is Registry.Tail.
func (cs *conns) tail(ctx context.Context, rt nudge.Runtime, n int) (Screen, error) {
	target := rt.PaneID
	if target == "" {
		target = rt.Target
	}
	if target == "" || !Live(rt.Status) {
		return cs.screens.last(rt.RuntimeID, n), nil
	}
	lines, err := cs.capture(ctx, rt.WorkspaceID, target, n)
	if err != nil {
		if isMissing(err) || strings.Contains(err.Error(), "can't find pane") {
			return cs.screens.last(rt.RuntimeID, n), nil
		}
		return Screen{}, err
	}
	return Screen{Lines: lines}, nil
}

// keepScreen captures the pane's last screen before nudge closes it, for Tail.
func (cs *conns) keepScreen(ctx context.Context, rt *nudge.Runtime, paneID string) {
	lines, err := cs.capture(ctx, rt.WorkspaceID, paneID, keptScreenLines)
	if err != nil {
		cs.cfg.Logger.Debug("keep the last screen", "runtime_id", rt.RuntimeID, "err", err)
		return
	}
	// tmux's own "Pane is dead (...)" line under a dead pane's screen, and the blank rows
	// between, are not the program's.
	for len(lines) > 0 && (strings.TrimSpace(lines[len(lines)-1]) == "" || strings.HasPrefix(lines[len(lines)-1], "Pane is dead")) {
		lines = lines[:len(lines)-1]
	}
	cs.screens.keep(rt.RuntimeID, lines, time.Now())
}

// capture is capture-pane of target's last n lines, cleaned for display.
func (cs *conns) capture(ctx context.Context, ws, target string, n int) ([]string, error) {
	c, err := cs.conn(ws)
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
