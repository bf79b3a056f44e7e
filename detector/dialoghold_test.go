package detector

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/streamrec"
	"github.com/nudgehq/nudge/panes"
)

// TestDialogHeldSteady replays each recorded dialog of a real CLI
// (testdata/streams/*_dialog.stream: its operator took ten seconds to answer) in real time
// into a pane the Monitor watches with the CLI's pack: once the dialog is up, the
// readiness stays NEEDS_CONFIRMATION with the same dialog, with no change published,
// through everything the CLI draws while it waits (Codex blinks its title every second),
// and leaves it once the dialog is answered and gone.
func TestDialogHeldSteady(t *testing.T) {
	files, _ := filepath.Glob("testdata/streams/*_dialog.stream")
	if len(files) == 0 {
		t.Fatal("no recorded dialogs in testdata/streams")
	}
	recs := map[string]*streamrec.Recording{}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := streamrec.Parse(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		recs[strings.TrimSuffix(filepath.Base(file), ".stream")] = rec
	}
	var ch changeLog
	e := newLiveEnvPanes(t, func(c *panes.Config) {
		profs, err := panes.LoadProfiles("")
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs { // the shell's profile (it may run sh) with the CLI's pack
			p := profs["shell"]
			p.Name, p.Pack = "replay-"+rec.Agent, rec.Agent
			profs[p.Name] = p
		}
		c.Profiles = profs
	}, func(c *MonitorConfig) { onReadiness(c, ch.add) })
	for name, rec := range recs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			replayDialog(t, e, &ch, rec)
		})
	}
}

// changeLog is every readiness the Monitor published (ReadinessChanged), by runtime.
type changeLog struct {
	mu  sync.Mutex
	got map[string][]string
}

func (l *changeLog) add(id string, c Classification, _ bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.got == nil {
		l.got = map[string][]string{}
	}
	l.got[id] = append(l.got[id], string(c.State)+" "+dialogID(c.Dialog))
}

func (l *changeLog) of(id string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got[id]...)
}

// replayDialog writes rec into a fresh runtime's pane with its timing, and checks the
// Monitor's readiness at each mark: from the first NEEDS_CONFIRMATION mark to the last,
// nothing is published.
func replayDialog(t *testing.T, e *liveEnv, ch *changeLog, rec *streamrec.Recording) {
	fifo := filepath.Join(t.TempDir(), "out")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	rt, err := e.reg.Spawn(context.Background(), panes.SpawnRequest{Workspace: "ws", Role: rec.Agent,
		Agent: "replay-" + rec.Agent, Argv: []string{"sh", "-c", "stty raw -echo -opost; exec cat " + fifo}})
	if err != nil {
		t.Fatal(err)
	}
	e.tmux("resize-window", "-t", rt.TmuxSession+":"+rt.TmuxWindow, "-x", fmt.Sprint(rec.Cols), "-y", fmt.Sprint(rec.Rows))
	out, err := os.OpenFile(fifo, os.O_RDWR, 0) // O_RDWR does not wait for cat (Linux)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var (
		held      []string // the published changes when the dialog was first seen
		dialog    string
		start     = time.Now()
		lastState string
	)
	for _, ev := range rec.Events {
		if d := time.Until(start.Add(ev.At)); d > 0 {
			time.Sleep(d)
		}
		if ev.Mark == "" {
			if _, err := out.Write(ev.Output); err != nil {
				t.Fatal(err)
			}
			continue
		}
		switch {
		case ev.Mark == string(nudge.NeedsConfirmation) && held == nil:
			waited := time.Now()
			// On the subtest's own t (e's is the parent's), with the published changes
			// and the screen when it times out.
			for deadline := waited.Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if now, ok := e.reg.Get(rt.RuntimeID); ok && now.Readiness == nudge.NeedsConfirmation && e.mon.Readiness(now) == nudge.NeedsConfirmation {
					break
				}
				if time.Now().After(deadline) {
					screen, _ := exec.Command("tmux", "-L", e.sock, "capture-pane", "-p", "-t", rt.PaneID).CombinedOutput()
					t.Fatalf("at %.3fs (%s): no NEEDS_CONFIRMATION after 60 s; published %v; screen:\n%s", ev.At.Seconds(), ev.Note, ch.of(rt.RuntimeID), screen)
				}
			}
			dialog = dialogID(e.rt(rt.RuntimeID).Dialog)
			held = ch.of(rt.RuntimeID)
			start = start.Add(time.Since(waited)) // the rest keeps its pace
		case ev.Mark == string(nudge.NeedsConfirmation):
			now := e.rt(rt.RuntimeID)
			if now.Readiness != nudge.NeedsConfirmation || dialogID(now.Dialog) != dialog || e.mon.Readiness(now) != nudge.NeedsConfirmation {
				t.Errorf("at %.3fs (%s): runtime reads %s, dialog %q (want %q)", ev.At.Seconds(), ev.Note, now.Readiness, dialogID(now.Dialog), dialog)
			}
			if got := ch.of(rt.RuntimeID); len(got) != len(held) {
				t.Errorf("at %.3fs (%s): readiness changed %d times while the dialog stood still: %v", ev.At.Seconds(), ev.Note, len(got)-len(held), got[len(held):])
				held = got
			}
		}
		lastState = ev.Mark
	}
	if dialog == "" {
		t.Fatal("the recording shows no dialog")
	}
	if lastState != string(nudge.NeedsConfirmation) { // answered: the dialog's verdict ends
		e.waitReadiness(rt.RuntimeID, nudge.Readiness(lastState))
	}
	t.Logf("%s: published %v", rec.Agent, ch.of(rt.RuntimeID))
}

// TestDialogHeldThroughRedraws: a program that keeps redrawing a line above its question
// (a spinner, an elapsed-time counter) never pauses for ready_quiet; the question stays
// on screen, and so does NEEDS_CONFIRMATION: the captures taken while output flows see
// it. Answered, the program streams on without a pause, and the dialog's verdict still
// ends while it does.
func TestDialogHeldThroughRedraws(t *testing.T) {
	var ch changeLog
	e := newLiveEnv(t, func(c *MonitorConfig) { onReadiness(c, ch.add) })
	rt := e.spawnShell("sh")
	// Once go exists, a redraw of the top row every 50 ms, as long as the question is up.
	goFile := filepath.Join(t.TempDir(), "go")
	e.tmux("send-keys", "-t", rt.PaneID, "-l", `(until [ -e `+goFile+` ]; do sleep 0.05; done; i=0; while :; do i=$((i+1)); printf '\0337\033[1;1Hworking %s\0338' $i; sleep 0.05; done) & `+
		`read -p 'Allow? (y/N) ' x; kill $!; wait; i=0; while [ $i -lt 200 ]; do echo "tick $i"; sleep 0.05; i=$((i+1)); done; echo STREAM_END`)
	e.tmux("send-keys", "-t", rt.PaneID, "Enter")
	e.waitReadiness(rt.RuntimeID, nudge.NeedsConfirmation)
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the redraws to run", func() bool {
		return strings.Contains(e.tmux("capture-pane", "-p", "-t", rt.PaneID), "working 2")
	})
	n0 := len(ch.of(rt.RuntimeID))
	ps := e.mon.get(rt.RuntimeID)
	for out0 := ps.outSeq.Load(); ps.outSeq.Load() < out0+60; time.Sleep(50 * time.Millisecond) {
	} // about three seconds of redraws: three dialog checks
	if got := ch.of(rt.RuntimeID)[n0:]; len(got) != 0 || e.rt(rt.RuntimeID).Readiness != nudge.NeedsConfirmation {
		t.Fatalf("readiness changed while the question stood still: %v (now %s)", got, e.rt(rt.RuntimeID).Readiness)
	}
	e.tmux("send-keys", "-t", rt.PaneID, "y", "Enter")
	e.waitReadiness(rt.RuntimeID, nudge.Busy)
	if screen := e.tmux("capture-pane", "-p", "-t", rt.PaneID); strings.Contains(screen, "STREAM_END") {
		t.Errorf("the question's verdict lasted until the stream ended:\n%s", screen)
	}
	e.waitReadiness(rt.RuntimeID, nudge.Ready)
	t.Logf("published %v", ch.of(rt.RuntimeID))
}

// TestDialogRedrawnWhileDrawing: a dialog that changes while the pane keeps drawing (a
// timer above it never lets the pane go quiet) is reported as it is now: the captures
// taken while output flows read the dialog again, and a new one is published with its
// own command, so a dialog first read half drawn (or followed by the next one) is not
// what the policy and the operator are left with.
func TestDialogRedrawnWhileDrawing(t *testing.T) {
	var ch changeLog
	e := newLiveEnvPanes(t, func(c *panes.Config) {
		profs, err := panes.LoadProfiles("")
		if err != nil {
			t.Fatal(err)
		}
		p := profs["shell"]
		p.Name, p.Pack = "dialog-claude", "claude"
		profs[p.Name] = p
		c.Profiles = profs
	}, func(c *MonitorConfig) { onReadiness(c, ch.add) })
	dir := t.TempDir()
	dialog := func(cmd string) string {
		return "\n● Bash(" + cmd + ")\n  ⎿  Waiting…\n\n" + strings.Repeat("─", 60) + "\n Bash command\n\n   " + cmd +
			"\n   \x1b[38;5;246mRun a command\x1b[39m\n\n Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and always allow access to tmp/ from this project\n   3. No\n\n Esc to cancel · Tab to amend · ctrl+e to explain\n"
	}
	for name, cmd := range map[string]string{"first": "touch first.txt", "second": "touch second.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(dialog(cmd)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	goFile := filepath.Join(dir, "go")
	script := `stty -echo; clear; cat ` + filepath.Join(dir, "first") + `; until [ -e ` + goFile + ` ]; do sleep 0.05; done; ` +
		`(i=0; while :; do i=$((i+1)); printf '\0337\033[1;1Hworking %s\0338' $i; sleep 0.05; done) & ` +
		`sleep 0.5; clear; cat ` + filepath.Join(dir, "second") + `; sleep 600`
	rt, err := e.reg.Spawn(context.Background(), panes.SpawnRequest{Workspace: "ws", Role: "dlg", Agent: "dialog-claude", Argv: []string{"sh", "-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitReadiness(rt.RuntimeID, nudge.NeedsConfirmation)
	first := e.rt(rt.RuntimeID).Dialog
	if first == nil || first.Command != "touch first.txt" {
		t.Fatalf("first dialog %+v", first)
	}
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the second dialog reported while the pane draws", func() bool {
		d := e.rt(rt.RuntimeID).Dialog
		return d != nil && d.Command == "touch second.txt"
	})
	if r := e.rt(rt.RuntimeID).Readiness; r != nudge.NeedsConfirmation {
		t.Fatalf("readiness %s", r)
	}
	t.Logf("published %v", ch.of(rt.RuntimeID))
}
