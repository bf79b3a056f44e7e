package detector

import (
	"testing"

	"github.com/nudgehq/nudge/panes"
)

// TestQuietWindowZeroMeansZero: --quiet-window 0 is kept, not reset to the 20 s default;
// a negative window is refused.
func TestQuietWindowZeroMeansZero(t *testing.T) {
	cfg := DefaultMonitorConfig()
	cfg.Registry = &panes.Registry{}
	cfg.QuietWindow = 0
	if err := cfg.setDefaults(); err != nil || cfg.QuietWindow != 0 {
		t.Fatalf("QuietWindow 0 became %v (%v)", cfg.QuietWindow, err)
	}
	cfg.QuietWindow = -1
	if err := cfg.setDefaults(); err == nil {
		t.Fatal("a negative QuietWindow was accepted")
	}
	if d := DefaultMonitorConfig().QuietWindow; d != DefaultQuietWindow {
		t.Fatalf("default quiet window %v", d)
	}
}
