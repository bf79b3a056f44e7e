package main

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// tailView is GET /v1/runtimes/{id}/tail: the pane's recent output, ANSI stripped and
// redacted.
type tailView struct {
	RuntimeID  string    `json:"runtime_id"`
	PaneID     string    `json:"pane_id"`
	Lines      []string  `json:"lines"`
	CapturedAt time.Time `json:"captured_at"`
}

const (
	defaultTailLines = 200
	maxTailLines     = 5000
)

// capturePane reads the last n lines of a runtime's pane over its workspace's control
// connection (joined wrapped lines, trailing blank lines dropped), cleaned for display.
func (d *daemon) capturePane(ctx context.Context, rt nudge.Runtime, n int) ([]string, error) {
	target := rt.PaneID
	if target == "" {
		target = rt.Target
	}
	if target == "" {
		return nil, nudge.NewError(nudge.TargetNotFound, "runtime "+rt.RuntimeID+" has no pane")
	}
	c, err := d.reg.Conn(rt.WorkspaceID)
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
		lines = append(lines, strings.TrimRight(cleanCapture(l), " "))
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

func (d *daemon) handleTail(w http.ResponseWriter, r *http.Request, c caller) {
	rt, ok := d.runtimeFor(w, r, c, verbRead)
	if !ok {
		return
	}
	n := defaultTailLines
	if s := r.URL.Query().Get("lines"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			writeError(w, badRequest("lines: want a positive number"))
			return
		}
		n = min(v, maxTailLines)
	}
	lines, err := d.capturePane(r.Context(), rt, n)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, tailView{RuntimeID: rt.RuntimeID, PaneID: rt.PaneID, Lines: lines, CapturedAt: time.Now()})
}
