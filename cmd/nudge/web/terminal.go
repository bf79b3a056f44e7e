package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// Terminal opens read-only views of panes.
type Terminal interface {
	// Open starts a view of rt's pane. changed is called (on another goroutine, never
	// blocking) whenever the pane draws. The caller closes the view.
	Open(ctx context.Context, rt nudge.Runtime, changed func()) (TerminalView, error)
}

// TerminalView is one open view of a pane.
type TerminalView interface {
	// Capture returns the pane's screen, cleaned for display and redacted.
	Capture(ctx context.Context) ([]string, error)
	// Done is closed when the view ends (the pane's session or tmux went away).
	Done() <-chan struct{}
	Close() error
}

// terminalThrottle is the least time between two screens sent to a viewer: a pane that
// draws continuously is shown at 10 frames a second.
const terminalThrottle = 100 * time.Millisecond

// TerminalFrame is one screen of GET /api/v1/runtimes/{id}/terminal's event stream.
type TerminalFrame struct {
	RuntimeID string    `json:"runtime_id"`
	Lines     []string  `json:"lines"`
	At        time.Time `json:"at"`
}

// handleTerminal is GET /api/v1/runtimes/{id}/terminal: the pane's screen as server-sent
// events, a frame whenever it changes. Read-only: nothing is ever typed through it.
func (s *Server) handleTerminal(w http.ResponseWriter, r *http.Request) {
	c := caller(r)
	rt, ok := s.deps.Runtimes.Get(r.PathValue("id"))
	if !ok || !c.Sees(rt.WorkspaceID) || (c.RuntimeID != "" && c.RuntimeID != rt.RuntimeID) {
		fail(w, nudge.NewError(nudge.NotFound, "no runtime "+r.PathValue("id")))
		return
	}
	if s.deps.Terminal == nil || rt.PaneID == "" {
		fail(w, nudge.NewError(nudge.Unavailable, "no terminal view of "+rt.RuntimeID))
		return
	}
	select {
	case s.terms <- struct{}{}:
		defer func() { <-s.terms }()
	default:
		fail(w, nudge.NewError(nudge.Unavailable, "too many terminal views open: close one"))
		return
	}
	wake := make(chan struct{}, 1)
	v, err := s.deps.Terminal.Open(r.Context(), rt, func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		s.log.Debug("terminal view", "runtime_id", rt.RuntimeID, "err", err)
		fail(w, nudge.NewError(nudge.Unavailable, "cannot open a view of the pane"))
		return
	}
	defer v.Close()
	s.streamTerminal(w, r, rt.RuntimeID, v, wake)
}

func (s *Server) streamTerminal(w http.ResponseWriter, r *http.Request, id string, v TerminalView, wake <-chan struct{}) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	var last []string
	send := func() bool {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		lines, err := v.Capture(ctx)
		cancel()
		if err != nil || slices.Equal(lines, last) {
			return err == nil
		}
		last = lines
		b, _ := json.Marshal(TerminalFrame{RuntimeID: id, Lines: lines, At: s.cfg.Now()})
		_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := w.Write(append(append([]byte("data: "), b...), "\n\n"...)); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send() {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-v.Done():
			return
		case <-wake:
		}
		if !send() {
			return
		}
		select { // coalesce a burst of output into one frame
		case <-r.Context().Done():
			return
		case <-time.After(terminalThrottle):
		}
	}
}

// TmuxTerminal views panes through a control-mode client of its own per view, attached
// with ignore-size and read-only: tmux never sizes a window for it (a phone never
// resizes what a person at a terminal sees), and it can change nothing. It is never a
// second terminal `attach`.
type TmuxTerminal struct {
	// Base is the connection's tmux and ssh settings (the daemon's); Session, the
	// server of a runtime bound to another one, SSHHost and the callbacks are set per view.
	Base controlmode.Config
}

// Open dials a control client on rt's session.
func (t TmuxTerminal) Open(ctx context.Context, rt nudge.Runtime, changed func()) (TerminalView, error) {
	pane, err := strconv.Atoi(strings.TrimPrefix(rt.PaneID, "%"))
	if err != nil || !strings.HasPrefix(rt.PaneID, "%") {
		return nil, errors.New("terminal: runtime has no pane id")
	}
	cfg := t.Base
	cfg.Session, cfg.SSHHost, cfg.CreateSession = rt.TmuxSession, rt.Host, false
	switch sock := rt.TmuxSocket; {
	case sock == "default":
		cfg.SocketName, cfg.SocketPath = "", ""
	case strings.HasPrefix(sock, "/"):
		cfg.SocketName, cfg.SocketPath = "", sock
	case sock != "":
		cfg.SocketName, cfg.SocketPath = sock, ""
	}
	cfg.IgnoreSize, cfg.ReadOnly, cfg.NoOutput = true, true, false
	cfg.OnOutput = func(p int, _ []byte, _ time.Duration) {
		if p == pane {
			changed()
		}
	}
	cfg.OnEvent = nil
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := controlmode.Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &tmuxView{c: c, target: rt.PaneID}, nil
}

type tmuxView struct {
	c      *controlmode.Conn
	target string
	once   sync.Once
}

// Capture is capture-pane of the pane's visible part, cleaned and redacted as nudge tail's is.
func (v *tmuxView) Capture(ctx context.Context) ([]string, error) {
	q, err := controlmode.Quote(v.target)
	if err != nil {
		return nil, err
	}
	rep, err := v.c.Do(ctx, "capture-pane -p -J -t "+q)
	if err != nil {
		return nil, err
	}
	lines := make([]string, 0, len(rep.Lines))
	for _, l := range rep.Lines {
		lines = append(lines, strings.TrimRight(nudge.StripANSI(l), " "))
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return []string{}, nil
	}
	// A secret split across lines (a PEM block) is masked as a whole too.
	return strings.Split(nudge.Redact(strings.Join(lines, "\n")), "\n"), nil
}

func (v *tmuxView) Done() <-chan struct{} { return v.c.Done() }

func (v *tmuxView) Close() error {
	var err error
	v.once.Do(func() { err = v.c.Close() })
	return err
}
