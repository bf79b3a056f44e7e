package doctor

import "testing"

func TestTmuxVersion(t *testing.T) {
	for in, want := range map[string][2]int{"tmux 3.2": {3, 2}, "tmux 3.3a": {3, 3}, "tmux next-3.5": {3, 5}, "tmux 10.12": {10, 12}} {
		if got, ok := tmuxVersion(in); !ok || got != want {
			t.Errorf("%q: got %v %v", in, got, ok)
		}
	}
	if _, ok := tmuxVersion("tmux master"); ok {
		t.Error("master parsed")
	}
}
