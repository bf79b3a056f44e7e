package inject

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nudgehq/nudge/controlmode"
)

func TestPendingEnvelope(t *testing.T) {
	cases := []struct {
		screen []string
		y, x   int
		want   string
	}{
		{[]string{"$ [BRIDGE_TRIGGER id=t1 thread=- reason=x] hi [/BRIDGE_TRIGGER]"}, 0, 200, "t1"},
		{[]string{"$ [BRIDGE_TRIGGER id=t1 thread=- reason=x] hi [/BRIDGE_TRIGGER]", "bash: [BRIDGE_TRIGGER: command not found", "$ "}, 2, 200, ""},
		{[]string{"› [BRIDGE_TRIGGER id=cx-0 thread=- reason=x] task (When you", "  have read this) [/", "  BRIDGE_TRIGGER]   "}, 2, 200, "cx-0"},
		{[]string{"[BRIDGE_TRIGGER id=a thread=- reason=x]", "line two", "[/BRIDGE_TRIGGER]"}, 2, 200, "a"},
		{[]string{"[BRIDGE_TRIGGER id=old thread=- reason=x] x [/BRIDGE_TRIGGER] [BRIDGE_TRIGGER id=new thread=- reason=x] y [/BRIDGE_TRIGGER]"}, 0, 200, "new"},
		{[]string{"half-typed draft"}, 0, 200, ""},
		{[]string{"x"}, 5, 200, ""},
		{[]string{"[BRIDGE_TRIGGER id=t1 thread=- reason=x] hi [/BRIDGE_TRIGGER]"}, 0, 0, ""}, // raw mode: Enter echoed as CR
	}
	for i, c := range cases {
		if got := pendingEnvelope(c.screen, c.y, c.x); got != c.want {
			t.Errorf("#%d: got %q, want %q", i, got, c.want)
		}
	}
}

// screenSender plays tmux for paneCheck: a screen, a cursor, and the capture commands it
// was asked for (capture-pane -S N starts at row N).
type screenSender struct {
	screen   []string
	x, y     int
	captures []string
}

func (s *screenSender) Do(ctx context.Context, cmd string) (*controlmode.Reply, error) {
	rs, err := s.DoAll(ctx, cmd)
	return rs[0], err
}

func (s *screenSender) DoAll(_ context.Context, cmds ...string) ([]*controlmode.Reply, error) {
	rs := make([]*controlmode.Reply, len(cmds))
	for i, c := range cmds {
		switch {
		case strings.HasPrefix(c, "display-message"):
			rs[i] = &controlmode.Reply{Lines: []string{fmt.Sprintf("0 0 %d %d %%1 42", s.y, s.x)}}
		case strings.HasPrefix(c, "capture-pane"):
			s.captures = append(s.captures, c)
			from := 0
			if _, n, ok := strings.Cut(c, " -S "); ok {
				from, _ = strconv.Atoi(n)
			}
			rs[i] = &controlmode.Reply{Lines: append([]string(nil), s.screen[min(from, len(s.screen)):]...)}
		}
	}
	return rs, nil
}

// TestPaneCheckCapturesNearTheCursor: after the first look, paneCheck captures from a few
// rows above the cursor's last row to the bottom, and looks at the whole screen again only
// when that cannot decide: the cursor moved above those rows, or an envelope ends at the
// cursor and starts above them. Its answer is always the whole screen's.
func TestPaneCheckCapturesNearTheCursor(t *testing.T) {
	screen := make([]string, 50)
	for i := range screen {
		screen[i] = fmt.Sprintf("$ [BRIDGE_TRIGGER id=old%d thread=- reason=x] done [/BRIDGE_TRIGGER]", i)
	}
	screen[49] = "$ "
	long := slices.Clone(screen)
	long[30] = "$ [BRIDGE_TRIGGER id=long thread=- reason=x] a prompt of"
	for i := 31; i < 49; i++ {
		long[i] = "many lines"
	}
	long[49] = "the end [/BRIDGE_TRIGGER]"
	near := slices.Clone(screen)
	near[49] = "$ [BRIDGE_TRIGGER id=near thread=- reason=x] hi [/BRIDGE_TRIGGER]"
	p := &Pipeline{}
	l := newLane("rt")
	for i, c := range []struct {
		screen    []string
		x, y      int
		want      string
		full, all int // captures of the whole screen, captures in all
	}{
		{screen, 2, 49, "", 1, 1},    // the first look: the whole screen
		{screen, 2, 49, "", 0, 1},    // then from the cursor's row up a margin
		{near, 80, 49, "near", 0, 1}, // an envelope waiting at the cursor, within the rows
		{long, 40, 49, "long", 1, 2}, // ends at the cursor, starts above the rows: look again
		{screen, 2, 10, "", 1, 2},    // the cursor moved up out of the rows (a clear): again
		{screen, 2, 10, "", 0, 1},
	} {
		s := &screenSender{screen: c.screen, x: c.x, y: c.y}
		v, stop, pending, seen := p.paneCheck(context.Background(), s, "%1", l)
		full := 0
		for _, cmd := range s.captures {
			if !strings.Contains(cmd, " -S ") {
				full++
			}
		}
		if stop || v.kind != proceed || pending != c.want || full != c.full || len(s.captures) != c.all {
			t.Errorf("#%d: stop=%v pending=%q captures %q, want pending %q, %d full of %d", i, stop, pending, s.captures, c.want, c.full, c.all)
		}
		if !slices.Equal(seen, []string{"%1", "0", "42"}) {
			t.Errorf("#%d: the pane's identity read as %q", i, seen)
		}
		if whole := pendingEnvelope(c.screen, c.y, c.x); whole != pending {
			t.Errorf("#%d: %q, the whole screen says %q", i, pending, whole)
		}
	}
}
