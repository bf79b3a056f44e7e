package detector_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acarl005/stripansi"
	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/streamrec"
	"github.com/nudgehq/nudge/detector"
)

// TestDialogOverBusyCue: a dialog at the bottom of the screen is NEEDS_CONFIRMATION
// whatever busy cue stands above it (the turn that asked is still running: a status
// row, a spinner, an elapsed-time counter). Each recorded dialog of a real CLI
// (testdata/streams/*_dialog.stream, at its first mark) is classified as drawn, and
// with the CLI's own busy row put in just above the dialog.
func TestDialogOverBusyCue(t *testing.T) {
	busy := map[string]struct{ above, row string }{ // the dialog's first line, and a busy row the pack reads as BUSY
		"codex":    {"• Running ", "• Working (12s • esc to interrupt)"},
		"claude":   {"────────", "✻ Ebbing… (12s · esc to interrupt)"},
		"gemini":   {"╭──────", "⠋ Thinking... (esc to cancel, 12s)"},
		"opencode": {"△ Permission required", "     ⬝⬝■■■■  esc interrupt  Working..."},
	}
	packs, err := detector.LoadPacks("")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/streams/*_dialog.stream")
	for i, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".stream"), func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := streamrec.Parse(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			p, b := packs[rec.Agent], busy[rec.Agent]
			if p == nil || b.row == "" {
				t.Fatalf("no pack or busy row for %q", rec.Agent)
			}
			if c := detector.Classify(p, b.row); c.State != nudge.Busy {
				t.Fatalf("the busy row %q alone reads %s, want BUSY", b.row, c.State)
			}
			screen := dialogScreen(t, 100+i, rec)
			if c := detector.Classify(p, screen); c.State != nudge.NeedsConfirmation {
				t.Fatalf("the dialog as drawn reads %s (%s)\n%s", c.State, c.Summary, stripansi.Strip(screen))
			}
			lines := strings.Split(stripansi.Strip(screen), "\n")
			at := -1
			for k, l := range lines {
				if strings.Contains(l, b.above) {
					at = k
					break
				}
			}
			if at < 1 {
				t.Fatalf("no line with %q on the dialog's screen", b.above)
			}
			if strings.Contains(b.above, "Permission") {
				at-- // OpenCode: the dialog's box starts a line above its title
			}
			over := append(append(append([]string{}, lines[1:at]...), b.row), lines[at:]...)
			if c := detector.Classify(p, strings.Join(over, "\n")); c.State != nudge.NeedsConfirmation {
				t.Errorf("the dialog under %q reads %s (%s), want NEEDS_CONFIRMATION\n%s", b.row, c.State, c.Summary, strings.Join(over, "\n"))
			}
		})
	}
}

// dialogScreen replays rec up to its first NEEDS_CONFIRMATION mark and returns the screen.
func dialogScreen(t *testing.T, n int, rec *streamrec.Recording) string {
	rp := newReplayPane(t, n, rec.Cols, rec.Rows)
	for _, ev := range rec.Events {
		if ev.Mark == string(nudge.NeedsConfirmation) {
			return rp.screen()
		}
		if ev.Mark == "" {
			if _, err := rp.fifo.Write(ev.Output); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Fatal("the recording has no NEEDS_CONFIRMATION mark")
	return ""
}
