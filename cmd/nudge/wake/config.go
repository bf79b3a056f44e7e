package wake

import (
	"errors"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Config configures a Waker. Each policy is off while its duration is 0.
type Config struct {
	// Quiet wakes a READY agent whose pane printed nothing for this long (seed 004: "no
	// output for 15+ minutes"). 0 turns the policy off.
	Quiet time.Duration
	// Unread wakes an agent whose read cursor (its heartbeats' cursor) has lagged behind a
	// thread head reported for it (Waker.Head) for this long. 0 turns the policy off.
	Unread time.Duration
	// Dormant wakes an agent that sent heartbeats once and has sent none for this long.
	// 0 turns the policy off.
	Dormant time.Duration
	// Gap is the least time between two wake prompts to one workspace (seed 004: "max 1
	// prompt per 5 minutes per project"). 0 means 5m.
	Gap time.Duration
	// Every is how often the policies are evaluated. 0 means 30s.
	Every time.Duration
	// QuietPrompt, UnreadPrompt and DormantPrompt are the prompts' first words; the
	// Waker adds what it saw (how long, which thread). "" means the default.
	QuietPrompt, UnreadPrompt, DormantPrompt string
	// Clock; nil means the wall clock.
	Clock Clock
	// Logger; nil means a null logger.
	Logger hclog.Logger
}

// DefaultConfig returns the defaults: every policy off (an operator turns each on with
// its flag), at most one wake prompt per workspace every 5 minutes, checked every 30 s.
func DefaultConfig() Config {
	return Config{Gap: 5 * time.Minute, Every: 30 * time.Second}
}

// On reports whether any policy is on.
func (c Config) On() bool { return c.Quiet > 0 || c.Unread > 0 || c.Dormant > 0 }

// Validate checks c.
func (c Config) Validate() error {
	if c.Quiet < 0 || c.Unread < 0 || c.Dormant < 0 || c.Gap < 0 || c.Every < 0 {
		return errors.New("wake durations must not be negative")
	}
	return nil
}

func (c *Config) complete() {
	d := DefaultConfig()
	if c.Gap == 0 {
		c.Gap = d.Gap
	}
	if c.Every == 0 {
		c.Every = d.Every
	}
	if c.QuietPrompt == "" {
		c.QuietPrompt = "You have produced no output for a while. Check your task and report your progress."
	}
	if c.UnreadPrompt == "" {
		c.UnreadPrompt = "A thread has messages you have not read. Read them and act on them."
	}
	if c.DormantPrompt == "" {
		c.DormantPrompt = "Your heartbeats stopped. Report your status."
	}
	if c.Clock == nil {
		c.Clock = RealClock{}
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
}
