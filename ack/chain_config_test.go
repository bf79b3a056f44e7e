package ack

import (
	"strings"
	"testing"
)

// TestResumeAttemptsZeroMeansZero: --resume-attempts 0 is kept (the chain spawns at once,
// saying why), not reset to the default 2.
func TestResumeAttemptsZeroMeansZero(t *testing.T) {
	if n := DefaultChainConfig().ResumeAttempts; n != 2 {
		t.Fatalf("default resume attempts %d, want 2", n)
	}
	c := NewChain(ChainConfig{ResumeAttempts: 0}, nil, nil)
	if c.cfg.ResumeAttempts != 0 {
		t.Fatalf("ResumeAttempts 0 became %d", c.cfg.ResumeAttempts)
	}
	if why := c.skipResume(&run{}); !strings.Contains(why, "resume attempts is 0") {
		t.Fatalf("skipResume: %q", why)
	}
}
