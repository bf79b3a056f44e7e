package observe

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/panes"
)

// Doer runs tmux commands on a workspace's control connection; *controlmode.Conn is one.
// Conn's results are compared with == (a new connection may mean a new session), so an
// implementation must be comparable (a pointer).
type Doer interface {
	DoAll(ctx context.Context, cmds ...string) ([]*controlmode.Reply, error)
}

var _ Doer = (*controlmode.Conn)(nil)

// StatusConfig is what a StatusLine reads. Workspaces, Line and Conn are required.
type StatusConfig struct {
	// Workspaces lists every workspace that has runtimes (for Mark("")).
	Workspaces func() []string
	// Line is ws's short status (`[reviewer: READY] [executioner: BUSY]`).
	Line func(ws string) string
	// Conn is ws's control connection.
	Conn func(ws string) (Doer, error)
	// Logger gets a debug line when a workspace's line could not be set; nil: none.
	Logger hclog.Logger
	// Down is the shell command line whose output tmux shows as ws's status line once the
	// writer closed (the daemon stops): `nudge status --short ...`, which then reads the
	// status files and says the state is stale. Close writes it as #(command); "" writes
	// the last line with "(stale HH:MM) " before it. nil leaves the last line as it is.
	Down func(ws string) string
}

// StatusLine keeps status-right of each agents_<ws> session set to the short status of its
// workspace, written through the workspace's control connection whenever Mark says it may
// have changed. Nothing polls: a burst of marks becomes one write. It owns one goroutine,
// started by NewStatusLine and stopped by Close.
type StatusLine struct {
	cfg  StatusConfig
	kick chan struct{}

	mu    sync.Mutex
	dirty map[string]bool // "" = every workspace

	// What was written last, per workspace, and on which connection. Touched only by
	// run's goroutine.
	last     map[string]string
	lastConn map[string]Doer

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

const (
	statusCoalesce   = 25 * time.Millisecond  // a burst of marks becomes one write
	statusMinGap     = 250 * time.Millisecond // a busy fleet's line is rebuilt at most 4 times a second
	statusRetryDelay = time.Second            // a workspace with no control connection yet
	statusRetries    = 30
	statusTimeout    = 5 * time.Second // longest wait for tmux to set one line
)

// NewStatusLine starts the writer and marks every workspace once.
func NewStatusLine(cfg StatusConfig) (*StatusLine, error) {
	if err := (Config{Status: &cfg}).Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &StatusLine{cfg: cfg, kick: make(chan struct{}, 1), dirty: map[string]bool{}, last: map[string]string{},
		lastConn: map[string]Doer{}, cancel: cancel, done: make(chan struct{})}
	go s.run(ctx)
	s.Mark("")
	return s, nil
}

// Close stops the writer, waits for it, and leaves each line it wrote saying the daemon
// is down (StatusConfig.Down). Idempotent; safe on nil.
func (s *StatusLine) Close() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		s.cancel()
		<-s.done
		if s.cfg.Down != nil {
			s.leave()
		}
	})
}

// leave writes each workspace's line for a daemon that is down: #(Down(ws)), or the last
// line marked stale. Called once run has ended; each write bounded by statusTimeout.
func (s *StatusLine) leave() {
	stamp := "(stale " + time.Now().Format("15:04") + ") "
	for ws, last := range s.last {
		val := tmuxLiteral(stamp + last)
		if cmd := s.cfg.Down(ws); cmd != "" {
			val = "#(" + tmuxLiteral(cmd) + ")"
		}
		c, err := s.cfg.Conn(ws)
		if err != nil || c != s.lastConn[ws] {
			continue // the session is gone, or another one: nothing of ours to mark
		}
		if err := s.set(context.Background(), c, ws, val, len(stamp)+len(last)); err != nil {
			s.cfg.Logger.Debug("status line at shutdown", "workspace", ws, "err", err)
		}
	}
}

// Mark asks for ws's line to be recomputed ("" = all). It never blocks; safe on nil.
func (s *StatusLine) Mark(ws string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.dirty[ws] = true
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *StatusLine) take() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dirty
	s.dirty = map[string]bool{}
	return d
}

func (s *StatusLine) run(ctx context.Context) {
	defer close(s.done)
	retry := map[string]int{}
	var retryC <-chan time.Time
	var last time.Time // the last rebuild
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-retryC:
			retryC = nil
			s.mu.Lock()
			for ws := range retry {
				s.dirty[ws] = true
			}
			s.mu.Unlock()
		}
		// Coalesce: let the rest of the burst arrive, then write each dirty workspace once;
		// in a stream of changes, no sooner than statusMinGap after the last rebuild.
		t := time.NewTimer(max(statusCoalesce, statusMinGap-time.Since(last)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		last = time.Now()
		s.writeDirty(ctx, retry)
		if len(retry) > 0 && retryC == nil {
			retryC = time.After(statusRetryDelay)
		}
	}
}

// writeDirty writes each dirty workspace; one that fails is retried (counted in retry)
// up to statusRetries times.
func (s *StatusLine) writeDirty(ctx context.Context, retry map[string]int) {
	for ws := range s.expand(s.take()) {
		if err := s.apply(ctx, ws); err != nil {
			if retry[ws]++; retry[ws] <= statusRetries {
				continue
			}
			s.cfg.Logger.Debug("status line", "workspace", ws, "err", err)
		}
		delete(retry, ws)
	}
}

// expand turns "" into every workspace that has runtimes or had a line.
func (s *StatusLine) expand(dirty map[string]bool) map[string]bool {
	if !dirty[""] {
		return dirty
	}
	delete(dirty, "")
	for _, ws := range s.cfg.Workspaces() {
		dirty[ws] = true
	}
	for ws := range s.last {
		dirty[ws] = true
	}
	return dirty
}

// apply writes ws's status line if it changed.
func (s *StatusLine) apply(ctx context.Context, ws string) error {
	line := s.cfg.Line(ws)
	c, err := s.cfg.Conn(ws)
	if err != nil {
		return err
	}
	if prev, ok := s.last[ws]; ok && prev == line && s.lastConn[ws] == c {
		return nil
	}
	if err := s.set(ctx, c, ws, tmuxLiteral(line), len(line)); err != nil {
		return err
	}
	s.last[ws], s.lastConn[ws] = line, c
	return nil
}

// set sets ws's status-right to the tmux format val, wide enough for n characters.
func (s *StatusLine) set(ctx context.Context, c Doer, ws, val string, n int) error {
	target, err := controlmode.Quote("=" + panes.SessionName(ws) + ":")
	if err != nil {
		return err
	}
	q, err := controlmode.Quote(val)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	_, err = c.DoAll(ctx,
		"set-option -t "+target+" status-right-length "+strconv.Itoa(max(40, n+2)),
		"set-option -t "+target+" status-right "+q)
	return err
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
