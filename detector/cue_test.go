package detector

import (
	"strings"
	"testing"

	"github.com/nudgehq/nudge"
)

// TestCueForms checks that a cue is a bare regexp or an object with a place, and that a
// bad place, within or style is refused.
func TestCueForms(t *testing.T) {
	ok := `{"composer":{"prompt":"^> ?"},"busy":["plain",{"re":"^\\* \\S+… \\(\\d+s","where":"above_composer","within":2},{"re":"esc to stop","where":"below_composer"}],"turn_done":["^done in \\d+s$"]}`
	p, err := ParsePack("t", []byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Busy) != 3 || p.Busy[1].Where != WhereAboveComposer || p.Busy[1].Within != 2 || p.Busy[0].Re != "plain" {
		t.Fatalf("busy = %+v", p.Busy)
	}
	for _, bad := range []string{
		`{"busy":[{"re":"x","where":"left"}]}`,
		`{"busy":[{"re":"x","within":-1,"where":"above_composer"}]}`,
		`{"busy":[{"re":"x","style":"bold"}]}`,
		`{"busy":[{"re":"("}]}`,
		`{"busy":[{"re":"x","colour":"red"}]}`,
	} {
		if _, err := ParsePack("t", []byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// TestCuePlaces shows the scoped cues at work on one small TUI: the same words are a
// status line in the chrome's place and prose above it; a turn-finished marker below a
// status-looking line ends it.
func TestCuePlaces(t *testing.T) {
	p, err := ParsePack("t", []byte(`{"composer_always_shown":true,"composer":{"prompt":"^> ?"},
		"busy":[{"re":"^\\* \\S+… \\(\\d+s","where":"above_composer","within":1},{"re":"esc to stop","where":"below_composer"}],
		"turn_done":["^─ done in \\d+s"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range []struct {
		screen string
		want   nudge.Readiness
	}{
		{"* Working… (3s)\n> \nfooter", nudge.Busy},
		{"reply\n> \n  esc to stop", nudge.Busy},
		{"* Working… (3s) is the status row\nsecond prose line\n> \nfooter", nudge.Ready},
		{"press esc to stop to cancel a turn\n> \nfooter", nudge.Ready},
		{"* Working… (3s)\n─ done in 3s\n> \nfooter", nudge.Ready},
	} {
		if got := Classify(p, tt.screen); got.State != tt.want {
			t.Errorf("#%d: got %s (%q), want %s", i, got.State, got.Summary, tt.want)
		}
	}
}

// TestCueStyle checks that a styled cue needs its style on a -e capture and counts on a
// plain one.
func TestCueStyle(t *testing.T) {
	p, err := ParsePack("t", []byte(`{"composer_always_shown":true,"composer":{"prompt":"^> ?"},
		"error":[{"re":"^\\s*Error: ","style":"fg:31"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	red := " \x1b[31mError: boom\x1b[39m\n\x1b[2m> \x1b[0m"
	prose := " Error: boom was fixed\n\x1b[2m> \x1b[0m"
	if got := Classify(p, red); got.State != nudge.ErrorState {
		t.Errorf("red error: got %s", got.State)
	}
	if got := Classify(p, prose); got.State != nudge.Ready {
		t.Errorf("prose: got %s", got.State)
	}
	if got := Classify(p, strings.ReplaceAll(strings.ReplaceAll(red, "\x1b[31m", ""), "\x1b[2m", "")); got.State != nudge.ErrorState {
		t.Errorf("plain capture: got %s", got.State)
	}
}
