package controlmode

import (
	"errors"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Config says how to reach tmux and where the stream goes. Only Session is required; the
// zero value of every other field is documented on it.
type Config struct {
	// Tmux is the tmux binary (on the remote host with SSHHost); "" means "tmux".
	Tmux string
	// SocketName selects the server with tmux -L NAME; "" means tmux's default unless
	// SocketPath is set.
	SocketName string
	// SocketPath selects the server with tmux -S PATH; it wins over SocketName.
	SocketPath string
	// ConfigFile is passed as tmux -f FILE (read only when a command starts the server,
	// e.g. with CreateSession); "" leaves tmux's default. Tests use /dev/null.
	ConfigFile string
	// Session is the session to attach (required). It is matched exactly (-t =Session).
	Session string
	// CreateSession creates the session first, with a plain `tmux new-session -d -s
	// Session` plus NewSessionArgs, if it does not exist. false means a missing session
	// is an error (ErrNoSession).
	CreateSession bool
	// NewSessionArgs are extra arguments for that new-session (e.g. -n bootstrap), passed
	// as argv (shell-quoted for ssh), never through a shell locally. nil means none.
	NewSessionArgs []string
	// PauseAfter is the pause-after client flag, in whole seconds (rounded up). 0 means
	// 5s; a negative value leaves the flag unset (tmux then never pauses this client and
	// may end it with "%exit too far behind").
	PauseAfter time.Duration
	// NoOutput adds the no-output client flag: an event- and command-only connection
	// that receives no pane output.
	NoOutput bool
	// IgnoreSize adds the ignore-size client flag (tmux >= 3.2): the client never counts
	// when tmux sizes a window, so a viewer (the web view's terminal) never resizes what a
	// person at a terminal sees. false leaves tmux's default.
	IgnoreSize bool
	// ReadOnly adds the read-only client flag: tmux refuses the client's commands that
	// change anything (capture-pane still works). false leaves tmux's default.
	ReadOnly bool
	// SSHHost, if set, runs everything as `ssh -T -- SSHHost '<quoted tmux argv>'`.
	// "" means tmux runs locally.
	SSHHost string
	// SSH is the ssh binary; "" means "ssh". Tests point it at a local wrapper.
	SSH string
	// SSHConfig, if set, is passed as ssh -F FILE; "" leaves the user's own ssh config
	// (ControlMaster, keys, jump hosts), which nudge never overrides otherwise.
	SSHConfig string

	// OnOutput receives decoded pane output (%output/%extended-output), with UTF-8
	// sequences split across lines already joined. data is valid only during the call.
	// It is called on the read goroutine and must not block: it may call Go, but not Do,
	// DoAll, Subscribe or Close, which wait for that goroutine. age is the
	// %extended-output age (0 for %output). nil discards output.
	OnOutput func(pane int, data []byte, age time.Duration)
	// OnEvent receives every other notification as a typed value, including flags-0
	// blocks (*Unsolicited) and unknown lines (*Unknown). Same rules as OnOutput. nil
	// discards events.
	OnEvent func(ev Event)
	// Logger gets protocol oddities and lifecycle messages; nil means a null logger.
	Logger hclog.Logger

	// MaxLine caps a notification or output line; longer ones are skipped and counted
	// (Stats.SkippedLines). 0 means DefaultMaxLine (1 MiB).
	MaxLine int
	// MaxReplyLine caps one line of a command reply; a longer line is left out of the
	// Reply and counted. 0 means DefaultMaxReplyLine (64 MiB).
	MaxReplyLine int
	// CloseTimeout bounds how long Close (and the end of a connection) waits for the tmux
	// client to exit after its stdin is closed before killing that process (never the
	// server). 0 means 3s.
	CloseTimeout time.Duration
}

// Validate reports a missing or contradictory setting.
func (c *Config) Validate() error {
	switch {
	case c.Session == "":
		return errors.New("controlmode: config: Session is required")
	case c.MaxLine < 0 || c.MaxReplyLine < 0 || c.CloseTimeout < 0:
		return errors.New("controlmode: config: negative limit")
	}
	return nil
}

func (c *Config) withDefaults() Config {
	d := *c
	if d.Tmux == "" {
		d.Tmux = "tmux"
	}
	if d.SSH == "" {
		d.SSH = "ssh"
	}
	if d.PauseAfter == 0 {
		d.PauseAfter = 5 * time.Second
	}
	if d.MaxLine == 0 {
		d.MaxLine = DefaultMaxLine
	}
	if d.MaxReplyLine == 0 {
		d.MaxReplyLine = DefaultMaxReplyLine
	}
	if d.CloseTimeout == 0 {
		d.CloseTimeout = 3 * time.Second
	}
	if d.Logger == nil {
		d.Logger = hclog.NewNullLogger()
	}
	if d.OnOutput == nil {
		d.OnOutput = func(int, []byte, time.Duration) {}
	}
	if d.OnEvent == nil {
		d.OnEvent = func(Event) {}
	}
	return d
}
