package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nudgehq/nudge/benchmarks/internal/panereader"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/inject"
)

// floor is the bare control client the trigger phase measures nudge against: the same
// envelope typed with one `send-keys -l` (and Enter as its own key, as nudge does) by a
// controlmode.Conn of the harness's own, no daemon in between. It is attached to the
// holder session, so it gets no %output of the benchmark's panes: what it measures is the
// cost of the write and tmux's delivery to the pane, the floor every path pays.
type floor struct {
	c *controlmode.Conn
}

func dialFloor(e *env) (*floor, error) {
	c, err := controlmode.Dial(context.Background(), controlmode.Config{Tmux: e.tmux, SocketName: e.tmuxSock, Session: "nbhold"})
	if err != nil {
		return nil, fmt.Errorf("floor client: %w", err)
	}
	return &floor{c: c}, nil
}

func (f *floor) close() {
	if f != nil {
		f.c.Close()
	}
}

// typeText writes the envelope to pane as one send-keys -l command and returns when
// tmux answered it. guarded wraps the command in the same if-shell guard nudge sends
// (controlmode.IfPane: the pane exists, is alive and runs pid), so that the guard's cost
// in tmux shows apart from nudge's own.
func (f *floor) typeText(pane string, pid int, text string, guarded bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	line := controlmode.SendKeys(pane, text)[0]
	if guarded {
		var err error
		if line, err = controlmode.IfPane(pane, pid, line); err != nil {
			return err
		}
	}
	_, err := f.c.Do(ctx, line)
	return err
}

// typeAll writes every command line (send-keys -l, one per pane) in one write and
// returns when tmux answered them all: the fan-out's floor.
func (f *floor) typeAll(lines []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := f.c.DoAll(ctx, lines...)
	return err
}

func (f *floor) enter(pane string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := f.c.Do(ctx, "send-keys -t "+pane+" Enter")
	return err
}

// floorSample types the same envelope nudge would, through the bare control client.
func (b *bench) floorSample(p *bpane, res *triggerResult, keep, guarded bool) error {
	if err := b.waitLane(p, res); err != nil {
		return err
	}
	time.Sleep(b.o.gap)
	marker, body := b.nextPrompt()
	text := inject.Envelope{ID: fmt.Sprintf("nb%d", b.seq), Reason: "trigger", AckHint: true}.Wrap(body)
	t0 := panereader.Mono()
	if err := b.floor.typeText(p.rt.PaneID, p.rt.PID, text, guarded); err != nil {
		return fmt.Errorf("floor send-keys -l: %w", err)
	}
	tDone := panereader.Mono()
	m, err := p.r.Await("m", marker, 10*time.Second)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	if err := b.floor.enter(p.rt.PaneID); err != nil {
		return fmt.Errorf("floor send-keys Enter: %w", err)
	}
	if _, err := p.r.Await("enter", "", 10*time.Second); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	switch {
	case keep && guarded:
		res.guardRead = append(res.guardRead, m.TS-t0)
		res.guardDone = append(res.guardDone, tDone-t0)
	case keep:
		res.floorRead = append(res.floorRead, m.TS-t0)
		res.floorDone = append(res.floorDone, tDone-t0)
	}
	return nil
}
