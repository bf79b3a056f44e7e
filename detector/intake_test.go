package detector

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/panes"
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
	// A strict intake (the pack's IntakeNeedsTurn: Gemini CLI may draw before it takes a
	// prompt) is not ended by drawing alone, nor by its queue's line; the signs of the
	// turn end it as before; the prompt back in the composer reads as it is.
	strict := []struct {
		name   string
		c      Classification
		seq    uint64
		screen string
		want   nudge.Readiness
		ended  bool
	}{
		{"drew since", ready, 8, "> \n", nudge.Busy, false},
		{"queued", Classification{State: nudge.Busy, Summary: "queued", Queued: true}, 8, "Queued (press ↑ to edit):\n [BRIDGE_TRIGGER id=t1 thread=- reason=trigger] hi\n", nudge.Busy, false},
		{"busy sign", Classification{State: nudge.Busy, Summary: "⠋ Thinking"}, 8, "", nudge.Busy, true},
		{"dialog", Classification{State: nudge.NeedsConfirmation}, 8, "", nudge.NeedsConfirmation, true},
		{"in transcript", ready, 8, "> [BRIDGE_TRIGGER id=t1 thread=- reason=trigger] hi\n> \n", nudge.Ready, true},
		{"prompt back in the composer", withDraft(ready, "[BRIDGE_TRIGGER id=t1 thread=- reason=trigger] hi"), 8, "", nudge.Ready, false},
	}
	for _, c := range strict {
		ps := &paneState{intake: intake{trigger: "t1", seq: 7, until: now.Add(30 * time.Second), strict: true}}
		got := ps.intakeView(c.c, c.seq, c.screen, now)
		if got.State != c.want || (ps.intake.trigger == "") != c.ended {
			t.Errorf("strict, %s: got %s (intake %+v), want %s, ended %v", c.name, got.State, ps.intake, c.want, c.ended)
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

// TestIntakeNeedsTurnLive: a fake Gemini CLI in a real pane, watched with the gemini pack
// (IntakeNeedsTurn), redraws its idle screen right after nudge's prompt left its
// composer, then shows it queued, and starts its turn only later (Gemini CLI under load,
// given a large paste). Neither the redraw nor the queue ends the intake: the pane reads
// BUSY and Intaking names the trigger. Its busy sign ends it, and once the turn is over
// the pane reads READY.
func TestIntakeNeedsTurnLive(t *testing.T) {
	t.Parallel()
	e := newLiveEnvPanes(t, func(c *panes.Config) {
		profs, err := panes.LoadProfiles("")
		if err != nil {
			t.Fatal(err)
		}
		p := profs["shell"] // the shell's profile (it runs sh) with Gemini CLI's pack
		p.Name, p.Pack, p.IntakeTimeout = "fake-gemini", "gemini", 10*time.Minute
		profs[p.Name] = p
		c.Profiles = profs
	}, nil)
	dir := t.TempDir()
	screen := `printf '\033[2J\033[H%b\n────────────────────────────────\n Shift+Tab to accept edits\n >   Type your message or @path/to/file\n workspace (/directory)    sandbox     /model\n'`
	step := func(file, above string) string {
		return `until [ -e ` + dir + `/` + file + ` ]; do sleep 0.05; done; ` + screen + ` '` + above + `'; `
	}
	script := `stty -echo; ` + screen + ` ''; ` +
		step("draw", "") + // drawn at Enter: still idle
		step("queue", ` Queued (press ↑ to edit):\n   [BRIDGE_TRIGGER id=t1]`) +
		step("spin", ` ⠋ Thinking... (esc to cancel, 1s)`) + // the turn
		step("answer", ` ✦ done`) +
		`exec sleep 600`
	rt, err := e.reg.Spawn(context.Background(), panes.SpawnRequest{Workspace: "ws", Role: "gem",
		Agent: "fake-gemini", Argv: []string{"sh", "-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitReadiness(rt.RuntimeID, nudge.Ready)
	ps := e.mon.get(rt.RuntimeID)
	e.mon.Submitted(rt.RuntimeID, "t1")
	intaking := func() bool { id, _, ok := e.mon.Intaking(e.rt(rt.RuntimeID)); return ok && id == "t1" }
	if !intaking() || e.mon.Readiness(e.rt(rt.RuntimeID)) != nudge.Busy {
		t.Fatal("no intake right after the prompt was submitted")
	}
	// show draws the next screen and waits until a capture taken after it was classified.
	show := func(file string) {
		t.Helper()
		seq := ps.outSeq.Load()
		touch(t, filepath.Join(dir, file))
		e.waitFor(file+" to be captured", func() bool {
			ps.mu.Lock()
			defer ps.mu.Unlock()
			return ps.outSeq.Load() > seq && ps.snap.PolledAt.UnixNano() > ps.lastOut.Load() && ps.class.Summary != outputSummary
		})
	}
	for _, file := range []string{"draw", "queue"} {
		show(file)
		if !intaking() || e.mon.Readiness(e.rt(rt.RuntimeID)) != nudge.Busy {
			t.Fatalf("%s before the turn ended the intake: intaking %v, readiness %s (%s)",
				file, intaking(), e.mon.Readiness(e.rt(rt.RuntimeID)), e.rt(rt.RuntimeID).Summary)
		}
	}
	// The screen may reach tmux in more than one piece, and a capture of its first piece
	// reads no busy sign yet: wait for the capture of the whole.
	show("spin")
	e.waitFor("the busy sign of the turn to end the intake", func() bool { return !intaking() })
	show("answer")
	e.waitReadiness(rt.RuntimeID, nudge.Ready)
}

func withDraft(c Classification, draft string) Classification {
	c.Draft = draft
	return c
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}
