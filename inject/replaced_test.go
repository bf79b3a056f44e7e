package inject

import (
	"context"
	"testing"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// lineSender answers every command with one fixed reply line.
type lineSender struct{ line string }

func (s lineSender) Do(context.Context, string) (*controlmode.Reply, error) {
	return &controlmode.Reply{Lines: []string{s.line}}, nil
}

func (s lineSender) DoAll(ctx context.Context, cmds ...string) ([]*controlmode.Reply, error) {
	rs := make([]*controlmode.Reply, len(cmds))
	for i := range cmds {
		rs[i], _ = s.Do(ctx, cmds[i])
	}
	return rs, nil
}

// TestPaneReplaced: tmux's display-message answers a missing pane with empty formats, not
// an error; that, another pane's id, a dead pane and a new pid all mean the prompt's pane
// is not the one that will get Enter.
func TestPaneReplaced(t *testing.T) {
	rt := nudge.Runtime{PID: 5}
	for _, tc := range []struct {
		line string
		gone bool
		code nudge.Code
	}{
		{"%4 0 5", false, ""},
		{"  ", true, nudge.TargetNotFound},
		{"", true, nudge.TargetNotFound},
		{"%7 0 5", true, nudge.TargetNotFound},
		{"%4 1 5", true, nudge.PaneDead},
		{"%4 0 6", true, nudge.PaneDead},
	} {
		v, gone := (&Pipeline{}).paneReplaced(context.Background(), lineSender{tc.line}, "%4", rt)
		if gone != tc.gone || v.code != tc.code {
			t.Errorf("%q: gone=%v code=%s (%s), want gone=%v code=%s", tc.line, gone, v.code, v.why, tc.gone, tc.code)
		}
	}
}

// TestGoneVerdict: an Enter refused by its guard gives the verdicts the look before Enter
// gave (it replaced that look): a missing pane, a dead one and a new pid.
func TestGoneVerdict(t *testing.T) {
	rt := nudge.Runtime{PID: 5}
	for _, tc := range []struct {
		gone controlmode.PaneGoneError
		code nudge.Code
	}{
		{controlmode.PaneGoneError{Target: "%4"}, nudge.TargetNotFound},
		{controlmode.PaneGoneError{Target: "%4", Pane: "%4", Dead: true, PID: 5}, nudge.PaneDead},
		{controlmode.PaneGoneError{Target: "%4", Pane: "%4", PID: 6}, nudge.PaneDead},
	} {
		v := goneVerdict("%4", rt, &tc.gone)
		if v.kind != fallback || v.code != tc.code {
			t.Errorf("%+v: kind=%d code=%s (%s), want fallback %s", tc.gone, v.kind, v.code, v.why, tc.code)
		}
	}
}

// TestConfirmationReadsThePanesIdentity: the look that confirms a prompt left the
// composer asks tmux for the pane's id and pid in the same step, and the final check after
// Enter reads that answer instead of asking again (one round trip less per trigger): a
// gone pane, a dead one and a new pid still fall back.
func TestConfirmationReadsThePanesIdentity(t *testing.T) {
	rt := nudge.Runtime{PID: 5}
	for _, tc := range []struct {
		line string
		gone bool
		code nudge.Code
	}{
		{"0 0 3 2 %4 5", false, ""},
		{"0 0 3 2 %7 5", true, nudge.TargetNotFound},
		{"0 0 3 2 %4 6", true, nudge.PaneDead},
	} {
		_, stop, _, seen := (&Pipeline{}).paneCheck(context.Background(), lineSender{tc.line}, "%4", newLane("rt"))
		if stop || seen == nil {
			t.Fatalf("%q: stop=%v seen=%q", tc.line, stop, seen)
		}
		v, gone := replacedVerdict("%4", rt, seen)
		if gone != tc.gone || v.code != tc.code {
			t.Errorf("%q: gone=%v code=%s (%s), want gone=%v code=%s", tc.line, gone, v.code, v.why, tc.gone, tc.code)
		}
	}
}
