package tui

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// TestLsAndStatusOneStateWord: `nudge ls` and `nudge status` (and the status bar) say a
// runtime's state with the same word. A paused runtime whose lifecycle status went back
// to ready (a forced trigger) is PAUSED in both, not ready in one and PAUSED in the other.
func TestLsAndStatusOneStateWord(t *testing.T) {
	cases := []nudge.Runtime{
		{RuntimeID: "rt_w.a", Status: nudge.StatusReady, Readiness: nudge.Ready, Paused: true},
		{RuntimeID: "rt_w.b", Status: nudge.StatusPaused, Readiness: nudge.Busy, Paused: true},
		{RuntimeID: "rt_w.c", Status: nudge.StatusReady, Readiness: nudge.Busy},
		{RuntimeID: "rt_w.d", Status: nudge.StatusExited, Readiness: nudge.Ready},
	}
	for i, rt := range cases {
		rt.WorkspaceID, rt.Role, rt.Agent, rt.PaneID = "w", "r", "shell", "%1"
		var b bytes.Buffer
		if err := PrintRuntimes(&b, false, api.Runtime{Runtime: rt}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		head, row := strings.Fields(lines[0]), strings.Fields(lines[1])
		col := -1
		for j, h := range head {
			if h == "STATE" {
				col = j
			}
		}
		if col < 0 || col >= len(row) {
			t.Fatalf("#%d: no STATE column:\n%s", i, b.String())
		}
		want := StatusRow{Runtime: api.Runtime{Runtime: rt}, State: apiStateWord(api.Runtime{Runtime: rt})}.State
		if got := row[col]; got != want || got != EntryOf(rt, 0).State {
			t.Errorf("#%d: ls says %q, status says %q (bar %q)", i, got, want, EntryOf(rt, 0).State)
		}
	}
}
