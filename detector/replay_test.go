package detector_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acarl005/stripansi"
	"github.com/nudgehq/nudge/ack"
	"github.com/nudgehq/nudge/cmd/nudge/streamrec"
	"github.com/nudgehq/nudge/detector"
)

// TestRecordedStreams replays the recorded output streams of real agent CLIs doing full
// turns (testdata/streams, see package streamrec for the format) into a tmux pane of
// the recorded size, and at every mark classifies the rendered screen with the CLI's
// pack: the readiness must be the one the live run saw (idle → busy → reply → idle,
// approval dialogs). Every ack marker the screen shows at a mark must have been found
// in the stream by then by the ack matcher, as the daemon reads it (a TUI that starts
// drawing the marker piecemeal shows up here). A new CLI version shows up here as a
// diff in classifications.
func TestRecordedStreams(t *testing.T) {
	files, _ := filepath.Glob("testdata/streams/*.stream")
	if len(files) == 0 {
		t.Fatal("no recorded streams in testdata/streams")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	packs, err := detector.LoadPacks("")
	if err != nil {
		t.Fatal(err)
	}
	for i, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".stream"), func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rec, err := streamrec.Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			p := packs[rec.Agent]
			if p == nil {
				t.Fatalf("no pack %q", rec.Agent)
			}
			replay(t, i, rec, p)
		})
	}
}

var ackRE = regexp.MustCompile(`ACK_TRIGGER:([A-Za-z0-9_.:@/-]*[A-Za-z0-9_@/-])`)

// replayPane is a pane on a private tmux server that shows whatever is written to its
// FIFO, untranslated (the recorded bytes already went through the tty's output
// processing once).
type replayPane struct {
	t      *testing.T
	socket string
	fifo   *os.File
	marks  int
}

func newReplayPane(t *testing.T, n, cols, rows int) *replayPane {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	rp := &replayPane{t: t, socket: fmt.Sprintf("nudge-replay-%d-%d", os.Getpid(), n)}
	t.Cleanup(func() { exec.Command("tmux", "-L", rp.socket, "kill-server").Run() })
	rp.tmux("-f", "/dev/null", "new-session", "-d", "-s", "r", "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows),
		"stty raw -echo -opost; exec cat "+path)
	// O_RDWR does not wait for the reader (Linux); cat opens it when the shell is up.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	rp.fifo = f
	return rp
}

func (rp *replayPane) tmux(args ...string) string {
	rp.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", rp.socket}, args...)...).CombinedOutput()
	if err != nil {
		rp.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

// screen waits until the pane has drawn everything written so far (a title set after
// it shows) and returns its capture.
func (rp *replayPane) screen() string {
	rp.t.Helper()
	rp.marks++
	title := fmt.Sprintf("nudge-replay-mark-%d", rp.marks)
	rp.fifo.WriteString("\033]2;" + title + "\007")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if strings.TrimSpace(rp.tmux("display-message", "-p", "-t", "r", "#{pane_title}")) == title {
			return rp.tmux("capture-pane", "-p", "-e", "-t", "r")
		}
	}
	rp.t.Fatal("the replay pane never caught up")
	return ""
}

func replay(t *testing.T, n int, rec *streamrec.Recording, p *detector.Pack) {
	rp := newReplayPane(t, n, rec.Cols, rec.Rows)
	marks := 0
	var m ack.Matcher
	acked := map[string]bool{}
	for _, ev := range rec.Events {
		if ev.Mark == "" {
			if _, err := rp.fifo.Write(ev.Output); err != nil {
				t.Fatal(err)
			}
			m.Feed(ev.Output, func(id []byte) { acked[string(id)] = true })
			continue
		}
		marks++
		screen := rp.screen()
		if dir := os.Getenv("NUDGE_REPLAY_DUMP"); dir != "" { // to add a mark's screen to testdata/screens
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s_mark%d.ansi", rec.Agent, marks)), []byte(screen), 0o644)
		}
		for _, id := range ackRE.FindAllStringSubmatch(stripansi.Strip(screen), -1) {
			if !acked[id[1]] {
				t.Errorf("at %.3fs (%s): ACK_TRIGGER:%s is on the screen but the stream's matcher did not find it", ev.At.Seconds(), ev.Note, id[1])
			}
		}
		if c := detector.Classify(p, screen); string(c.State) != ev.Mark {
			t.Errorf("at %.3fs (%s): classified %s (%s), recorded %s\nscreen:\n%s", ev.At.Seconds(), ev.Note, c.State, c.Summary, ev.Mark, stripansi.Strip(screen))
		}
	}
	if marks == 0 {
		t.Fatal("the recording has no mark")
	}
}
