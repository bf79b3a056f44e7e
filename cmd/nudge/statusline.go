package main

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/panes"
)

// statusLine keeps status-right of each agents_<ws> session set to the short status of its
// workspace (`[reviewer: READY] [executioner: BUSY]`), written through the workspace's
// control connection whenever a runtime or readiness event changes it. Nothing polls: the
// observer marks workspaces dirty from hub events; run coalesces a burst into one write.
type statusLine struct {
	d    *daemon
	kick chan struct{}

	mu    sync.Mutex
	dirty map[string]bool // "" = every workspace

	// What was written last, per workspace, and on which connection (a new connection
	// may mean a new session). Touched only by run's goroutine.
	last     map[string]string
	lastConn map[string]*controlmode.Conn
}

const (
	statusCoalesce   = 25 * time.Millisecond // a burst of events becomes one write
	statusRetryDelay = time.Second           // a workspace with no control connection yet
	statusRetries    = 30
)

func newStatusLine(d *daemon) *statusLine {
	return &statusLine{d: d, kick: make(chan struct{}, 1), dirty: map[string]bool{}, last: map[string]string{},
		lastConn: map[string]*controlmode.Conn{}}
}

// mark asks for ws's line to be recomputed ("" = all). It never blocks.
func (s *statusLine) mark(ws string) {
	s.mu.Lock()
	s.dirty[ws] = true
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *statusLine) take() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dirty
	s.dirty = map[string]bool{}
	return d
}

func (s *statusLine) run(ctx context.Context) {
	retry := map[string]int{}
	var retryC <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-retryC:
			retryC = nil
			for ws := range retry {
				s.mu.Lock()
				s.dirty[ws] = true
				s.mu.Unlock()
			}
		}
		// Coalesce: let the rest of the burst arrive, then write each dirty workspace once.
		t := time.NewTimer(statusCoalesce)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		for ws := range s.expand(s.take()) {
			if err := s.apply(ctx, ws); err != nil {
				if retry[ws]++; retry[ws] <= statusRetries {
					continue
				}
				s.d.log.Debug("status line", "workspace", ws, "err", err)
			}
			delete(retry, ws)
		}
		if len(retry) > 0 && retryC == nil {
			retryC = time.After(statusRetryDelay)
		}
	}
}

// expand turns "" into every workspace that has runtimes.
func (s *statusLine) expand(dirty map[string]bool) map[string]bool {
	if !dirty[""] {
		return dirty
	}
	delete(dirty, "")
	for _, rt := range s.d.reg.List() {
		dirty[rt.WorkspaceID] = true
	}
	for ws := range s.last {
		dirty[ws] = true
	}
	return dirty
}

// apply writes ws's status line if it changed.
func (s *statusLine) apply(ctx context.Context, ws string) error {
	var rts []runtimeView
	for _, rt := range s.d.reg.List() {
		if rt.WorkspaceID == ws {
			rts = append(rts, s.d.view(rt))
		}
	}
	line := shortStatus(rts, false)
	c, err := s.d.reg.Conn(ws)
	if err != nil {
		return err
	}
	if prev, ok := s.last[ws]; ok && prev == line && s.lastConn[ws] == c {
		return nil
	}
	target, err := controlmode.Quote("=" + panes.SessionName(ws) + ":")
	if err != nil {
		return err
	}
	val, err := controlmode.Quote(tmuxLiteral(line))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	length := max(40, len(line)+2)
	if _, err := c.DoAll(ctx,
		"set-option -t "+target+" status-right-length "+itoa(length),
		"set-option -t "+target+" status-right "+val); err != nil {
		return err
	}
	s.last[ws], s.lastConn[ws] = line, c
	return nil
}

// tmuxLiteral keeps tmux from format-expanding a status string: # becomes ##, and
// characters that cannot be quoted are dropped.
func tmuxLiteral(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == 0 {
			return ' '
		}
		return r
	}, s)
	return strings.ReplaceAll(s, "#", "##")
}
