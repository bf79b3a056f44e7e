package controlmode

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MinVersion is the oldest tmux nudge runs on: control-mode flow control (pause-after,
// %extended-output, %pause/%continue) and refresh-client -B subscriptions arrived in 3.2.
const MinVersion = "3.2"

// ErrTmuxTooOld reports a tmux server older than MinVersion.
var ErrTmuxTooOld = errors.New("tmux is too old: nudge needs tmux " + MinVersion + " or newer")

// Caps is what one tmux server supports, learned from its version (`#{version}` at
// connect, or `tmux -V`). Every tmux behaviour nudge relies on that differs between the
// versions it supports is a method here, so callers pick a working form by asking, never
// by assuming the newest. The zero value is a server of unknown version, which is assumed
// to behave as the newest known release (Known reports false; the log says so).
type Caps struct {
	Version string // as the server reports it: "3.2a", "3.4", "next-3.7", "openbsd-7.6"
	major   int
	minor   int
	known   bool
}

// ParseVersion reads a tmux version as `#{version}` ("3.3a", "next-3.6") or `tmux -V`
// ("tmux 3.3a") prints it. A version it cannot read ("master", "openbsd-7.6") gives a
// Caps with Known false.
func ParseVersion(s string) Caps {
	s = strings.TrimSpace(s)
	if f := strings.Fields(s); len(f) > 0 {
		s = f[len(f)-1]
	}
	c := Caps{Version: s}
	v := s
	if i := strings.LastIndex(v, "-"); i >= 0 {
		v = v[i+1:]
	}
	major, rest, ok := strings.Cut(v, ".")
	if !ok || strings.HasPrefix(s, "openbsd-") {
		return c
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	a, err1 := strconv.Atoi(major)
	b, err2 := strconv.Atoi(rest[:end])
	if err1 != nil || err2 != nil {
		return c
	}
	c.major, c.minor, c.known = a, b, true
	return c
}

// Known reports whether the version was understood.
func (c Caps) Known() bool { return c.known }

// AtLeast reports whether the server is major.minor or newer; a server of unknown
// version counts as newer.
func (c Caps) AtLeast(major, minor int) bool {
	if !c.known {
		return true
	}
	return c.major > major || c.major == major && c.minor >= minor
}

// Check fails with ErrTmuxTooOld for a server older than MinVersion, saying which.
func (c Caps) Check() error {
	if c.AtLeast(3, 2) {
		return nil
	}
	return fmt.Errorf("%w (this server is %s; install a newer tmux, e.g. from your package manager or a release build, and restart its server)", ErrTmuxTooOld, c.Version)
}

// RepeatKey reports whether a bare `send-keys` in a key binding sends the key the binding
// was invoked by (3.3+). On 3.2 it sends nothing: a root-table Any binding made of it would
// swallow every key typed.
func (c Caps) RepeatKey() bool { return c.AtLeast(3, 3) }

// DeadSignal reports whether #{pane_dead_signal} exists (3.3+). On 3.2 a pane killed by a
// signal has neither it nor #{pane_dead_status}; the signal is only in the "Pane is dead
// (signal N, …)" line tmux writes into a remain-on-exit pane.
func (c Caps) DeadSignal() bool { return c.AtLeast(3, 3) }

// DisplayToClient reports whether `display-message -c CLIENT` shows a message on that
// client (3.3+). tmux 3.2 declares -c as a flag without a value, so the command fails.
func (c Caps) DisplayToClient() bool { return c.AtLeast(3, 3) }

// DeadPaneSafe reports whether a remain-on-exit pane's program may end while a control
// client is attached (3.3+). tmux 3.2a can crash then, taking every session of the server
// with it: its control client's output queued for the pane is written after the pane's
// buffer was freed (control_write_pending checks for a pane that is gone, not for one that
// is dead). Every pane nudge starts is remain-on-exit, so that its end is seen.
func (c Caps) DeadPaneSafe() bool { return c.AtLeast(3, 3) }

// TabsInCapture reports whether capture-pane keeps a tab the program printed as one \t
// (3.6+) instead of the blank cells it moved over.
func (c Caps) TabsInCapture() bool { return c.AtLeast(3, 6) }

// Degraded lists, for people, what nudge cannot do as well on this server and what it does
// instead; empty when nothing is degraded.
func (c Caps) Degraded() []string {
	var d []string
	if !c.known {
		d = append(d, fmt.Sprintf("tmux version %q not understood: assumed to behave as the newest release", c.Version))
	}
	if !c.RepeatKey() {
		d = append(d, "human keys: a bare send-keys does not repeat its key before tmux 3.3, so each key is bound on its own "+
			"(printable ASCII, control and named keys, with Meta); other keys (non-ASCII, IME input, pastes) are seen from the pane's output a moment later")
	}
	if !c.DisplayToClient() {
		d = append(d, "notifications: display-message cannot name a client before tmux 3.3, so none is shown on attached clients; "+
			"the status line (--status-line) and --notify-command still carry them")
	}
	if !c.DeadPaneSafe() {
		d = append(d, "dead panes: tmux before 3.3 can crash, with every session of the server, when a remain-on-exit pane's program ends "+
			"while a control client is attached (every pane nudge starts is one), so a pane of a tmux server of your own is registered "+
			"--unmanaged only; use tmux 3.3 or newer")
	}
	if !c.DeadSignal() {
		d = append(d, "dead panes: no #{pane_dead_signal} before tmux 3.3; a signal's number is read from the pane's \"Pane is dead (signal N\" line")
	}
	return d
}

// String is the version as reported.
func (c Caps) String() string { return c.Version }
