package streamrec

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/controlmode"
)

func TestParse(t *testing.T) {
	rec, err := Parse(strings.NewReader("nudge-stream 1 agent=codex size=80x24\n# a comment\n\n0.000 o a\\033[1mb\\134\\012\n1.5 m READY idle composer\n2.000 o  x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Agent != "codex" || rec.Cols != 80 || rec.Rows != 24 || len(rec.Events) != 3 {
		t.Fatalf("got %+v", rec)
	}
	if got := string(rec.Events[0].Output); got != "a\033[1mb\\\n" {
		t.Errorf("output %q", got)
	}
	if e := rec.Events[1]; e.Mark != "READY" || e.Note != "idle composer" || e.At != 1500*time.Millisecond {
		t.Errorf("mark %+v", e)
	}
	if got := string(rec.Events[2].Output); got != " x" {
		t.Errorf("output with a leading blank %q", got)
	}
	for i, bad := range []string{"", "nudge-stream 2\n", "other 1\n", "nudge-stream 1\nx o a\n", "nudge-stream 1\n0.1 q a\n", "nudge-stream 1\n0.1\n"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("#%d: %q parsed", i, bad)
		}
	}
}

// TestRecordRealPane records a real tmux pane: the first event draws the screen as it
// was, then the output follows, marks in place; the replacement applies.
func TestRecordRealPane(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	sock := fmt.Sprintf("streamrec-%d", os.Getpid())
	tmux := func(args ...string) {
		if out, err := exec.Command("tmux", append([]string{"-L", sock, "-f", os.DevNull}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("tmux %v: %v %s", args, err, out)
		}
	}
	tmux("new-session", "-d", "-s", "s", "-x", "40", "-y", "10", "cat")
	t.Cleanup(func() { exec.Command("tmux", "-L", sock, "kill-server").Run() })
	tmux("send-keys", "-t", "s", "-l", "before secret")
	time.Sleep(300 * time.Millisecond)
	var buf bytes.Buffer
	r, err := Record(context.Background(), controlmode.Config{SocketName: sock, Session: "s"}, "%0",
		Options{Agent: "shell", Cols: 40, Rows: 10, Replace: []string{"secret", "hidden"}}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	r.Mark("READY", "first")
	tmux("send-keys", "-t", "s", "-l", " after")
	time.Sleep(500 * time.Millisecond)
	r.Mark("BUSY", "second")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r.Close() // idempotent
	text := buf.String()
	rec, err := Parse(&buf)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if len(rec.Events) < 4 || !bytes.Contains(rec.Events[0].Output, []byte("before hidden")) || rec.Events[1].Mark != "READY" || rec.Events[len(rec.Events)-1].Mark != "BUSY" {
		t.Fatalf("recorded:\n%s", text)
	}
	if !strings.Contains(text, "after") || strings.Contains(text, "secret") {
		t.Fatalf("recorded:\n%s", text)
	}
}
