package detector

import (
	"testing"

	"github.com/nudgehq/nudge"
)

// TestDemoPack: the demo agent's screens (package cmd/nudge/demoagent draws them) read
// as it means them, and its dialog reads as data that approve and deny can answer.
func TestDemoPack(t *testing.T) {
	p := defaultPacks(t)["demo"]
	if p == nil {
		t.Fatal("no demo pack")
	}
	for i, ex := range p.Examples {
		if got := Classify(p, ex.Screen); got.State != ex.State {
			t.Errorf("#%d: got %s, want %s\n%s", i, got.State, ex.State, ex.Screen)
		}
	}
	screen := "› ask first\nDo you want to run this command?\n  $ touch demo.txt\n› 1. Yes\n  2. No\nPress 1 or 2 (Esc to cancel)"
	d := ParseDialog(p, screen)
	if d == nil || d.ApproveKey != "1" || d.DenyKey != "2" || d.Command != "touch demo.txt" || len(d.Options) != 2 {
		t.Fatalf("dialog: %+v", d)
	}
	// Answered: the footer is gone and the reply and the composer follow.
	done := screen[:len(screen)-len("Press 1 or 2 (Esc to cancel)")] + "1\n● Approved.\n\n› "
	if got := Classify(p, done); got.State != nudge.Ready {
		t.Errorf("after the answer: %s", got.State)
	}
	if d := ParseDialog(p, done); d != nil {
		t.Errorf("after the answer, a dialog: %+v", d)
	}
}
