package detector

import (
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// TestIntakeView: while nudge's prompt is in intake, a READY screen reads BUSY; the
// intake ends when the pane drew since, when the screen shows the agent busy, asking or
// failing, when the prompt is in its transcript (not in its composer), or when the window
// passed; a screen not understood leaves it pending.
func TestIntakeView(t *testing.T) {
	now := time.Unix(1000, 0)
	ready := Classification{State: nudge.Ready, Summary: "prompt", Composer: true}
	cases := []struct {
		name   string
		c      Classification
		seq    uint64
		screen string
		at     time.Time
		want   nudge.Readiness
		ended  bool
	}{
		{"silent", ready, 7, "> \n", now, nudge.Busy, false},
		{"drew since", ready, 8, "> \n", now, nudge.Ready, true},
		{"busy sign", Classification{State: nudge.Busy, Summary: "⠋ Thinking"}, 7, "", now, nudge.Busy, true},
		{"dialog", Classification{State: nudge.NeedsConfirmation}, 7, "", now, nudge.NeedsConfirmation, true},
		{"error", Classification{State: nudge.ErrorState}, 7, "", now, nudge.ErrorState, true},
		{"in transcript", ready, 7, "> [BRIDGE_TRIGGER id=t1 thread=- reason=trigger] hi\n> \n", now, nudge.Ready, true},
		{"other id in transcript", ready, 7, "> [BRIDGE_TRIGGER id=t10 thread=- reason=trigger] hi\n> \n", now, nudge.Busy, false},
		{"window passed", ready, 7, "> \n", now.Add(time.Minute), nudge.Ready, true},
		{"not understood", Classification{State: nudge.Unknown}, 7, "", now, nudge.Unknown, false},
	}
	for _, c := range cases {
		ps := &paneState{intake: intake{trigger: "t1", seq: 7, until: now.Add(30 * time.Second)}}
		got := ps.intakeView(c.c, c.seq, c.screen, c.at)
		if got.State != c.want || (ps.intake.trigger == "") != c.ended {
			t.Errorf("%s: got %s (intake %+v), want %s, ended %v", c.name, got.State, ps.intake, c.want, c.ended)
		}
		if c.want == nudge.Busy && c.c.State == nudge.Ready && (!ps.intake.held || !strings.Contains(got.Summary, "t1") || !got.Composer) {
			t.Errorf("%s: the override %+v does not name the trigger, keep the composer, or mark itself held", c.name, got)
		}
	}
	// The prompt still in the composer (a draft holding its envelope) is not its echo.
	ps := &paneState{intake: intake{trigger: "t1", seq: 7, until: now.Add(time.Second)}}
	c := ready
	c.Draft = "[BRIDGE_TRIGGER id=t1 thread=- reason=trigger] hi [/BRIDGE_TRIGGER]"
	if got := ps.intakeView(c, 7, "> "+c.Draft, now); got.State != nudge.Busy || ps.intake.trigger == "" {
		t.Errorf("the prompt in the composer ended the intake: %s %+v", got.State, ps.intake)
	}
	// Once the intake ended, the next verdict is the screen's own and clears held.
	ps.intake.end()
	if got := ps.intakeView(ready, 9, "", now); got.State != nudge.Ready || ps.intake.held {
		t.Errorf("after the intake: %s held %v", got.State, ps.intake.held)
	}
}
