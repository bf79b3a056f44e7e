package detector

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/panes"
)

// TestHumanKeysReachPane types through a real tmux client attached in a PTY into a program
// that reads its terminal raw with echo off and writes what it gets to a file. Every byte
// must reach the program unchanged (tmux 3.2's bare send-keys swallowed them all), and the
// keys must be seen as a human's at once: the program prints nothing, so no %output can
// tell, only the key binding.
func TestHumanKeysReachPane(t *testing.T) {
	e := newLiveEnv(t, nil)
	// Letters, digits, the characters tmux's parser treats specially, Tab, C-a, M-b (ESC b),
	// BSpace, Up, a non-ASCII character (bound by no key on tmux 3.2) and Enter.
	typed := "echo hi;#~'\"\\{}$%\t\x01\x1bb\x7f\x1b[Aé\r"
	out := filepath.Join(t.TempDir(), "got")
	script := "stty raw -echo; dd bs=1 count=" + strconv.Itoa(len(typed)) + " of=" + out + " 2>/dev/null; sleep 600"
	rt, err := e.reg.Spawn(context.Background(), panes.SpawnRequest{
		Workspace: "ws", Role: "raw", Agent: "shell", Argv: []string{"bash", "--norc", "--noprofile", "-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor("pane started", func() bool { return e.rt(rt.RuntimeID).Status != nudge.StatusStarting })
	h := e.attach(rt)
	e.waitFor("key binding installed", func() bool { return e.mon.keysBound("") })

	h.typeKeys("e")
	e.waitFor("the first key seen as a human's", func() bool { return e.rt(rt.RuntimeID).OperatorBusy })
	h.typeKeys(typed[1:])
	var got []byte
	for deadline := time.Now().Add(30 * time.Second); len(got) < len(typed); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the program read %q, want %q; pane:\n%s", got, typed, e.tmux("capture-pane", "-p", "-t", rt.PaneID))
		}
		got, _ = os.ReadFile(out)
	}
	if !bytes.Equal(got, []byte(typed)) {
		t.Fatalf("the program read %q, want %q", got, typed)
	}
}

func TestRootKeys(t *testing.T) {
	// list-keys -T root as tmux 3.2a prints it (quoting and spacing kept).
	out := `bind-key -T root \"                   send-keys \" \; wait-for -S nudge-human
bind-key -T root \;                   send-keys \; \; wait-for -S nudge-human
bind-key -T root C-\\                 send-keys C-\\ \; wait-for -S nudge-human
bind-key -T root "M-#"                send-keys "M-#" \; wait-for -S nudge-human
bind-key -T root 'M-"'                send-keys 'M-"' \; wait-for -S nudge-human
bind-key -r -T root M-a               display-message user
bind-key -T root MouseDown1Pane       select-pane -t = \; send-keys -M
`
	got := rootKeys(out)
	want := map[string]bool{`"`: true, ";": true, `C-\`: true, "M-#": true, `M-"`: true, "M-a": false, "MouseDown1Pane": false}
	if len(got) != len(want) {
		t.Fatalf("rootKeys = %v, want %v", got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("rootKeys[%q] = %v, %v; want %v", k, g, ok, v)
		}
	}
	keys := eachKeys()
	if slices.Contains(keys, "C-i") || slices.Contains(keys, "C-m") || !slices.Contains(keys, "M-S-Up") || !slices.Contains(keys, ";") {
		t.Errorf("eachKeys: aliases or missing keys: %v", keys)
	}
	if argvKey("M-;") != `M-\;` || argvKey("a") != "a" {
		t.Error("argvKey does not escape a trailing ;")
	}
}
