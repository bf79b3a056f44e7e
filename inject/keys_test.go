package inject

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/controlmode"
)

func TestTypeCommandsShape(t *testing.T) {
	guard := func(cmd string) string {
		line, err := controlmode.IfPane("%1", 77, cmd)
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	got, _ := TypeCommands("%1", 77, "it's;", "")
	want := []string{guard(`send-keys -t '%1' -l -- 'it'\''s;'`)}
	if len(got) != 1 || got[0] != want[0] {
		t.Errorf("one line: got %q, want %q", got, want)
	}
	got, _ = TypeCommands("%1", 77, "a'\n\nb\rc", "buf")
	want = []string{`set-buffer -b 'buf' -- 'a'\'''"\n"''"\n"'b'"\r"'c'`, guard(`paste-buffer -b 'buf' -d -p -r -t '%1'`)}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines: got %q, want %q", got, want)
	}
	// One line longer than MaxKeys is pasted too.
	if got, err := TypeCommands("%1", 0, strings.Repeat("x", MaxKeys+1), "buf"); err != nil || len(got) != 2 || !strings.HasPrefix(got[0], "set-buffer") {
		t.Errorf("long line: got %d commands, %v; want set-buffer and paste-buffer", len(got), err)
	}
	if got, err := TypeCommands("%1", 77, "", ""); got != nil || err != nil {
		t.Errorf("empty text gave commands")
	}
	if got, err := EnterCommand("%1", 77); err != nil || got != guard(`send-keys -t '%1' -H 0d`) {
		t.Errorf("EnterCommand = %q, %v", got, err)
	}
	for _, bad := range []string{"x\ny\x00", "bad \xff utf-8\n"} {
		if got, err := TypeCommands("%1", 77, bad, "b"); err == nil || got != nil {
			t.Errorf("%q: got %q, %v; want refused", bad, got, err)
		}
	}
}

// hostile are prompts that must reach the pane byte-exact after Sanitize and Wrap.
var hostile = []string{
	"run the tests;",
	`it's "quoted" and 'single' ;'`,
	"$HOME ~ ~/x ${PATH} \\$HOME",
	"#{pane_id} #(echo pwned) {a} } {",
	"%if 1\nnew-window\n%endif",
	"back\\slash \\n \\ \\\\",
	"@path/file.go and /slash-command",
	"日本語の文章 😀 中文 é",
	"esc\x1b[31m red\x1b[0m nul\x00 bel\x07 cr\r\nlf",
	strings.Repeat("five kilobytes of text; 'q' \"d\" $X ", 150),
	strings.Repeat("a 5 KB paste; it's line $N\n", 190),
	"ends with a quote'",
	"'",
	"new-window ; kill-server",
}

func TestTypeCommandsTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("no tmux")
	}
	for _, bracketed := range []bool{false, true} {
		t.Run(fmt.Sprintf("bracketed=%v", bracketed), func(t *testing.T) {
			testTmuxDelivery(t, bracketed)
		})
	}
}

func testTmuxDelivery(t *testing.T, bracketed bool) {
	srv := newTmuxServer(t)
	out := filepath.Join(t.TempDir(), "pane.out")
	prog := "stty raw -echo; exec cat > " + out
	if bracketed {
		prog = `printf '\033[?2004h'; ` + prog
	}
	pane := srv.startPane(t, prog)
	pid, _ := strconv.Atoi(srv.tmux(t, "display", "-p", "-t", pane, "#{pane_pid}"))
	c := srv.control(t)
	var want bytes.Buffer
	for i, p := range hostile {
		body, err := Sanitize(p, 0)
		if err != nil {
			t.Fatalf("#%d: Sanitize: %v", i, err)
		}
		text := Envelope{ID: fmt.Sprintf("t-%d", i), Thread: "th", Reason: "test", AckHint: i%2 == 0}.Wrap(body)
		cmds, err := TypeCommands(pane, pid, text, "nudge-t")
		if err != nil {
			t.Fatalf("#%d: TypeCommands: %v", i, err)
		}
		c.run(t, cmds)
		if bracketed && NeedsPaste(text) {
			text = "\x1b[200~" + text + "\x1b[201~"
		}
		want.WriteString(text)
		waitFile(t, out, want.Bytes())
		c.checkClean(t, pane)
	}
}

type tmuxServer struct{ name string }

func newTmuxServer(t *testing.T) *tmuxServer {
	s := &tmuxServer{name: fmt.Sprintf("nudge-t-%d-%d", os.Getpid(), time.Now().UnixNano())}
	t.Cleanup(func() { exec.Command("tmux", "-L", s.name, "kill-server").Run() })
	return s
}

func (s *tmuxServer) tmux(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", s.name, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("tmux %q: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// startPane starts the session with prog in its only pane and waits until prog
// has exec'd cat (the tty is then raw). It returns the pane id.
func (s *tmuxServer) startPane(t *testing.T, prog string) string {
	pane := s.tmux(t, "new-session", "-d", "-s", "s", "-x", "200", "-y", "50", "-P", "-F", "#{pane_id}", prog)
	deadline := time.Now().Add(20 * time.Second)
	for s.tmux(t, "display", "-p", "-t", pane, "#{pane_current_command}") != "cat" {
		if time.Now().After(deadline) {
			t.Fatalf("pane program did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return pane
}

func waitFile(t *testing.T, path string, want []byte) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, _ := os.ReadFile(path)
		if bytes.Equal(got, want) {
			return
		}
		if len(got) > len(want) || !bytes.HasPrefix(want, got) || time.Now().After(deadline) {
			t.Fatalf("pane got %d bytes, want %d\n got tail %q\nwant tail %q",
				len(got), len(want), tail(got), tail(want))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func tail(b []byte) []byte { return b[max(0, len(b)-120):] }
