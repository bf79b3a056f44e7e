package panes

import (
	"context"
	"strconv"
	"strings"

	"github.com/nudgehq/nudge/controlmode"
)

// tmux before 3.3 has no #{pane_dead_signal}: a pane whose program a signal killed reads
// dead with neither a status nor a signal, like a death tmux has not reaped yet. Once it
// has reaped it, a remain-on-exit pane (every pane nudge starts) shows the end on its last
// line, "Pane is dead (signal 9, Wed Nov 25 03:51:01 2026)", written only then. On such a
// server each dead pane without a status has that line read (one capture-pane), so the
// record carries 128+signal as with newer tmux, without waiting for statusGrace.

// deadSignals fills in the exit status of the dead panes without one from their "Pane is
// dead (signal N" line, on a server without #{pane_dead_signal}.
func deadSignals(ctx context.Context, c *controlmode.Conn, panes []paneInfo) {
	if c.Caps().DeadSignal() {
		return
	}
	for i := range panes {
		p := &panes[i]
		if !p.Dead || p.ExitStatus != nil {
			continue
		}
		reply, err := c.Do(ctx, "capture-pane -p -t "+p.ID)
		if err != nil {
			continue
		}
		if n, ok := deadSignal(reply.Lines); ok {
			n += 128
			p.ExitStatus = &n
		}
	}
}

// deadSignal finds the signal number in the last non-empty line of a dead pane's screen.
func deadSignal(lines []string) (int, bool) {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		rest, ok := strings.CutPrefix(l, "Pane is dead (signal ")
		if !ok {
			return 0, false
		}
		num, _, ok := strings.Cut(rest, ",")
		n, err := strconv.Atoi(num)
		if !ok || err != nil || n <= 0 || n > 128 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}
