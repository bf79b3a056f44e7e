package inject

import "testing"

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
