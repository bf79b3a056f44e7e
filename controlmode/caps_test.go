package controlmode

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in                      string
		known, ok, repeat, tabs bool
	}{
		{"3.2a", true, true, false, false},
		{"tmux 3.2", true, true, false, false},
		{"3.3a", true, true, true, false},
		{"tmux 3.4", true, true, true, false},
		{"3.5a", true, true, true, false},
		{"3.6b", true, true, true, true},
		{"next-3.7", true, true, true, true},
		{"3.10", true, true, true, true},
		{"4.0", true, true, true, true},
		{"3.1c", true, false, false, false},
		{"tmux 2.9a", true, false, false, false},
		{"openbsd-7.6", false, true, true, true},
		{"master", false, true, true, true},
		{"", false, true, true, true},
	} {
		c := ParseVersion(tc.in)
		if c.Known() != tc.known || (c.Check() == nil) != tc.ok || c.RepeatKey() != tc.repeat || c.TabsInCapture() != tc.tabs {
			t.Errorf("ParseVersion(%q) = %+v: known %v check %v repeat %v tabs %v", tc.in, c, c.Known(), c.Check(), c.RepeatKey(), c.TabsInCapture())
		}
		if err := c.Check(); err != nil && (!errors.Is(err, ErrTmuxTooOld) || !strings.Contains(err.Error(), c.Version)) {
			t.Errorf("Check(%q) = %v", tc.in, err)
		}
		if d := c.Degraded(); (len(d) == 0) != (tc.known && tc.repeat) {
			t.Errorf("Degraded(%q) = %q", tc.in, d)
		}
	}
}

// TestDialCaps: Dial learns the server's version, the one `tmux -V` reports.
func TestDialCaps(t *testing.T) {
	checkGoroutines(t)
	srv := newServer(t, "sleep", "600")
	c := dial(t, srv.config())
	out, err := exec.Command("tmux", "-V").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := ParseVersion(string(out)); c.Caps() != want || !c.Caps().Known() {
		t.Errorf("Caps = %+v, want %+v", c.Caps(), want)
	}
	t.Logf("tmux %s; degraded: %q", c.Caps(), c.Caps().Degraded())
}
