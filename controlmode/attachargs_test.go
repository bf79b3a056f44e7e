package controlmode

import (
	"strings"
	"testing"
	"time"
)

// TestAttachArgsFlags: the client flags each setting adds to the attach command.
func TestAttachArgsFlags(t *testing.T) {
	for i, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Session: "s", PauseAfter: 5 * time.Second}, "-f pause-after=5"},
		{Config{Session: "s", PauseAfter: -1, NoOutput: true}, "-f no-output"},
		{Config{Session: "s", PauseAfter: 5 * time.Second, IgnoreSize: true, ReadOnly: true}, "-f pause-after=5,ignore-size,read-only"},
		{Config{Session: "s", PauseAfter: -1}, "attach-session -t =s"},
	} {
		got := strings.Join(tt.cfg.attachArgs(), " ")
		if !strings.HasSuffix(got, tt.want) {
			t.Errorf("#%d: got %q, want it to end %q", i, got, tt.want)
		}
	}
}
