package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/controlmode"
)

// Keyboard types a viewer's keys into panes (satisfied by *PaneKeys).
type Keyboard interface {
	// Type sends lines (guarded send-keys command lines, keyLines') to rt's pane, in
	// order, or none of them while nudge types into that pane.
	Type(ctx context.Context, rt nudge.Runtime, lines []string) error
}

// Doer runs tmux command lines in order (*controlmode.Conn).
type Doer interface {
	DoAll(ctx context.Context, cmds ...string) ([]*controlmode.Reply, error)
}

// PaneKeys types through the daemon's own control connection of the pane's workspace,
// never a client of the viewer's: nothing is attached, nothing is resized. All three
// fields are required.
type PaneKeys struct {
	// Conn is the workspace's control connection (panes.Registry.Conn).
	Conn func(workspace string) (Doer, error)
	// Beside runs fn while nudge types nothing into the runtime's pane, or returns its
	// refusal (inject.Pipeline.Beside).
	Beside func(runtimeID string, fn func() error) error
	// Keyed tells the collision gate that a person typed at the pane
	// (detector.Monitor.Keyed): triggers then wait the quiet window, as after keys typed
	// in a terminal attached to it.
	Keyed func(runtimeID string)
}

// Type implements Keyboard.
func (k *PaneKeys) Type(ctx context.Context, rt nudge.Runtime, lines []string) error {
	return k.Beside(rt.RuntimeID, func() error {
		conn, err := k.Conn(rt.WorkspaceID)
		if err != nil {
			return nudge.NewError(nudge.Unavailable, "no control connection to workspace "+rt.WorkspaceID+": nothing typed")
		}
		k.Keyed(rt.RuntimeID)
		_, err = conn.DoAll(ctx, lines...)
		switch {
		case errors.Is(err, controlmode.ErrPaneGone):
			return nudge.NewError(nudge.PaneDead, "the pane of "+rt.RuntimeID+" is gone or runs another program: not typed")
		case err != nil:
			return nudge.NewError(nudge.SendKeysError, "type into "+rt.RuntimeID+": "+err.Error())
		}
		return nil
	})
}

// KeysRequest is POST /api/v1/runtimes/{id}/keys: what a viewer typed, in order.
type KeysRequest struct {
	Keys []Key `json:"keys"`
}

// Key is one thing typed: Text (printable characters, typed literally) or Key (one named
// key, NamedKeys).
type Key struct {
	Text string `json:"text,omitempty"`
	Key  string `json:"key,omitempty"`
}

// Limits of one KeysRequest.
const (
	maxKeys     = 256  // entries
	maxKeysText = 4096 // bytes of text in all
	maxKeysBody = 64 << 10
)

// NamedKeys are the keys a viewer may press by name, in tmux's spelling: Esc, Tab,
// Enter, Backspace, the arrows and the keys around them, F1–F12, and Ctrl or Alt with a
// letter or an arrow.
var NamedKeys = regexp.MustCompile(`^(Escape|Tab|BTab|Enter|BSpace|Space|Up|Down|Left|Right|Home|End|PPage|NPage|DC|IC|F[1-9]|F1[0-2]|[CM]-[a-z]|[CM]-(Up|Down|Left|Right))$`)

// keyLines turns keys into guarded send-keys lines for rt's pane (controlmode.IfPane:
// the pane still runs the runtime's program, decided in the same server step), runs of
// named keys in one line, and says what was typed without saying the text (it may be a
// password): "4 characters, Escape, C-c".
func keyLines(rt nudge.Runtime, keys []Key) (lines []string, what string, err error) {
	bad := func(why string) ([]string, string, error) { return nil, "", nudge.NewError(nudge.BadRequest, why) }
	if len(keys) == 0 || len(keys) > maxKeys {
		return bad(fmt.Sprintf("want 1 to %d keys", maxKeys))
	}
	target, err := controlmode.Quote(rt.PaneID)
	if err != nil {
		return bad("the runtime has no pane")
	}
	var said []string
	var named []string
	text := 0
	flush := func() error {
		if len(named) == 0 {
			return nil
		}
		l, err := controlmode.IfPane(rt.PaneID, rt.PID, "send-keys -t "+target+" "+strings.Join(named, " "))
		lines, named = append(lines, l), nil
		return err
	}
	for _, k := range keys {
		switch {
		case k.Text != "" && k.Key == "":
			if text += len(k.Text); text > maxKeysText || !printable(k.Text) {
				return bad(fmt.Sprintf("text: printable characters only (a control key goes by name), at most %d bytes", maxKeysText))
			}
			if err := flush(); err != nil {
				return nil, "", err
			}
			q, _ := controlmode.Quote(k.Text)
			l, err := controlmode.IfPane(rt.PaneID, rt.PID, "send-keys -t "+target+" -l -- "+q)
			if err != nil {
				return nil, "", err
			}
			lines = append(lines, l)
			n, unit := utf8.RuneCountInString(k.Text), " characters"
			if n == 1 {
				unit = " character"
			}
			said = append(said, fmt.Sprint(n)+unit)
		case k.Key != "" && k.Text == "" && NamedKeys.MatchString(k.Key):
			named = append(named, k.Key)
			said = append(said, k.Key)
		default:
			return bad(fmt.Sprintf("key %q: want text or one of the named keys (Escape, Tab, Enter, BSpace, Up, C-c, …)", k.Key))
		}
	}
	if err := flush(); err != nil {
		return nil, "", err
	}
	return lines, strings.Join(said, ", "), nil
}

// printable reports whether s is valid UTF-8 without control characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

// mayType reports whether c's token holds the type verb.
func mayType(c auth.Caller) bool { return c.Verbs == nil || slices.Contains(c.Verbs, auth.VerbType) }

// handleKeys is POST /api/v1/runtimes/{id}/keys: a viewer that switched typing on types
// into the pane. It needs the type verb (the "type" scope); every try is audited with the
// device's name, a refused one too.
func (s *Server) handleKeys(w http.ResponseWriter, r *http.Request) {
	c := caller(r)
	rt, ok := s.deps.Runtimes.Get(r.PathValue("id"))
	if !ok || !c.Sees(rt.WorkspaceID) || (c.RuntimeID != "" && c.RuntimeID != rt.RuntimeID) {
		fail(w, nudge.NewError(nudge.NotFound, "no runtime "+r.PathValue("id")))
		return
	}
	if err := c.AllowRuntime(auth.VerbType, rt.RuntimeID, rt.WorkspaceID); err != nil {
		s.auditKeys(c, rt, "terminal_keys_refused", err.Error())
		fail(w, err)
		return
	}
	if s.deps.Keys == nil || rt.PaneID == "" {
		fail(w, nudge.NewError(nudge.Unavailable, "no typing into "+rt.RuntimeID+" here"))
		return
	}
	var b KeysRequest
	if err := auth.DecodeJSON(http.MaxBytesReader(w, r.Body, maxKeysBody), &b); err != nil {
		fail(w, nudge.NewError(nudge.BadRequest, "want {\"keys\": [{\"text\": …} or {\"key\": …}, …]}"))
		return
	}
	lines, what, err := keyLines(rt, b.Keys)
	if err != nil {
		fail(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if err := s.deps.Keys.Type(ctx, rt, lines); err != nil {
		s.auditKeys(c, rt, "terminal_keys_refused", err.Error()+"; keys: "+what)
		fail(w, err)
		return
	}
	s.auditKeys(c, rt, "terminal_keys", "typed in the web view's terminal: "+what)
	writeJSON(w, http.StatusOK, map[string]any{"runtime_id": rt.RuntimeID, "typed": len(b.Keys)})
}

func (s *Server) auditKeys(c auth.Caller, rt nudge.Runtime, event, reason string) {
	if s.deps.Audit != nil {
		uid := -1
		s.deps.Audit(nudge.AuditRecord{Event: event, Subject: c.Subject, PeerUID: &uid, RuntimeID: rt.RuntimeID,
			Workspace: rt.WorkspaceID, Reason: reason})
	}
}
