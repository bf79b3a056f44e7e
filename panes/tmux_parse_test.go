package panes

import "testing"

// TestParsePanes: the sweep's line, the window name last (it may hold spaces), the
// foreground command before the session.
func TestParsePanes(t *testing.T) {
	ps := parsePanes([]string{
		"%3 0   4242 0 2 node agents_w1 my window",
		"%4 1 1  4243 0 3 -bash agents_w1 role",
		"garbage",
	})
	if len(ps) != 2 {
		t.Fatalf("%+v", ps)
	}
	if p := ps[0]; p.ID != "%3" || p.Dead || p.PID != 4242 || p.WindowIndex != 2 || p.Command != "node" || p.Session != "agents_w1" || p.Window != "my window" {
		t.Fatalf("%+v", p)
	}
	if p := ps[1]; !p.Dead || p.ExitStatus == nil || *p.ExitStatus != 1 || p.Command != "-bash" || !isShell(p.Command) {
		t.Fatalf("%+v", p)
	}
	for cmd, want := range map[string]bool{"bash": true, "-zsh": true, "/bin/sh": true, "fish": true, "node": false, "claude": false, "codex": false, "": false} {
		if isShell(cmd) != want {
			t.Errorf("isShell(%q) = %v", cmd, !want)
		}
	}
}
