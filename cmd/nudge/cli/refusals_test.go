package cli

import (
	"strings"
	"testing"
)

// Every refusal says how to fix it: a spawn outside the roots names `serve --root`, an
// unknown runtime names `nudge ls`.
func TestRefusalsSayHowToFix(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	outside := t.TempDir()
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"spawn", "--workspace", "w", "--role", "r", "--agent", "shell", "--dir", outside, "--", "cat"},
			[]string{"outside the allowed workspace roots (" + td.cfg.Panes.Roots[0] + ")", "nudge serve --root"}},
		{[]string{"pause", "rt_w.nobody"}, []string{"no runtime rt_w.nobody", "nudge ls"}},
	} {
		_, errOut, code := td.runCLI(c.args...)
		if code != 1 {
			t.Errorf("nudge %s: exit %d, want 1", strings.Join(c.args, " "), code)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("nudge %s: %q lacks %q", strings.Join(c.args, " "), errOut, w)
			}
		}
	}
}
