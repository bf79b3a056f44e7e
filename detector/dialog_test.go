package detector

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nudgehq/nudge"
)

// TestParseDialog reads the approval dialogs of real Claude Code 2.1 and Codex 0.169
// screens as data: question, what it is about, the options and their keys; the id is
// stable for the same dialog and changes with it; approve and deny pick yes and no.
func TestParseDialog(t *testing.T) {
	packs, err := LoadPacks("")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		pack, file, title, text string
		keys, labels            []string
		yes, no                 string
	}{
		{"claude", "claude_confirm_bash.ansi", "Do you want to proceed?", "Bash command\ntouch approved.txt\nRun a command",
			[]string{"1", "2", "3"}, []string{"Yes", "Yes, and always allow access to 002/ from this project", "No"}, "1", "3"},
		{"codex", "codex_confirm_exec.txt", "Would you like to run the following command?",
			"Environment: local\nReason: The stand-in asks to run touch approved.txt\n$ touch approved.txt",
			[]string{"y", "p", "Escape"}, []string{"Yes, proceed", "Yes, and don't ask again for commands that start with `touch approved.txt`", "No, and tell Codex what to do differently"}, "y", "Escape"},
		{"gemini", "gemini_confirm_shell.txt", "Allow execution of [Shell]?", "? Shell  touch denied.txt\ntouch denied.txt",
			[]string{"1", "2", "Escape"}, []string{"Allow once", "Allow for this session", "No, suggest changes"}, "1", "Escape"},
	}
	for _, tt := range tests {
		b, err := os.ReadFile(filepath.Join("testdata", "screens", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		p := packs[tt.pack]
		d := ParseDialog(p, nudge.StripANSI(string(b)))
		if d == nil {
			t.Fatalf("%s: no dialog", tt.file)
		}
		if d.Title != tt.title || d.Text != tt.text || len(d.Options) != len(tt.keys) {
			t.Fatalf("%s: %q %q %+v", tt.file, d.Title, d.Text, d.Options)
		}
		for i, o := range d.Options {
			if o.Key != tt.keys[i] || o.Label != tt.labels[i] {
				t.Errorf("%s option %d: %+v, want %s %q", tt.file, i, o, tt.keys[i], tt.labels[i])
			}
		}
		if y, n := DialogChoice(p, d, true), DialogChoice(p, d, false); y != tt.yes || n != tt.no {
			t.Errorf("%s: approve %q deny %q", tt.file, y, n)
		}
		again := ParseDialog(p, nudge.StripANSI(string(b)))
		if again.DialogID != d.DialogID || len(d.DialogID) != 12 {
			t.Errorf("%s: id %q then %q", tt.file, d.DialogID, again.DialogID)
		}
		changed := ParseDialog(p, nudge.StripANSI(string(b))+"\n")
		other := ParseDialog(p, replaceLast(nudge.StripANSI(string(b)), "touch ", "rm -rf /; touch "))
		if changed.DialogID != d.DialogID || other == nil || other.DialogID == d.DialogID {
			t.Errorf("%s: a different dialog keeps its id", tt.file)
		}
	}
	// No dialog on an idle screen, nor for a pack that reads none.
	b, _ := os.ReadFile(filepath.Join("testdata", "screens", "claude_idle.txt"))
	if d := ParseDialog(packs["claude"], string(b)); d != nil {
		t.Errorf("dialog on an idle screen: %+v", d)
	}
	if d := ParseDialog(packs["shell"], "Do you want to proceed?\n 1. Yes"); d != nil {
		t.Errorf("shell dialog: %+v", d)
	}
}

// replaceLast replaces the last old in s (the dialog is at the bottom of the screen).
func replaceLast(s, old, new string) string {
	if i := strings.LastIndex(s, old); i >= 0 {
		return s[:i] + new + s[i+len(old):]
	}
	return s
}

// TestParseDialogButtons reads OpenCode's permission dialog, a row of buttons whose
// selection shows only by colour (real 1.18.33 screens): each option's keys go from the
// selected button, round the row, so the same choice has other keys once the selection
// moved, and the dialog's id changes with it.
func TestParseDialogButtons(t *testing.T) {
	packs, err := LoadPacks("")
	if err != nil {
		t.Fatal(err)
	}
	p := packs["opencode"]
	read := func(file, cmd string) *nudge.Dialog {
		b, err := os.ReadFile(filepath.Join("testdata", "screens", file))
		if err != nil {
			t.Fatal(err)
		}
		d := ParseDialog(p, string(b))
		if d == nil || d.Title != "△ Permission required" || d.Text != "# Shell command\n$ "+cmd || len(d.Options) != 3 {
			t.Fatalf("%s: %+v", file, d)
		}
		return d
	}
	first := read("opencode_confirm_bash.ansi", "touch x.txt")
	for i, want := range []string{"Enter", "Right Enter", "Right Right Enter"} {
		if first.Options[i].Key != want {
			t.Errorf("first selected, option %d: %+v, want %q", i, first.Options[i], want)
		}
	}
	if first.ApproveKey != "Enter" || first.DenyKey != "Right Right Enter" {
		t.Errorf("approve %q deny %q", first.ApproveKey, first.DenyKey)
	}
	moved := read("opencode_confirm_reject_selected.ansi", "touch denied.txt")
	for i, want := range []string{"Right Enter", "Right Right Enter", "Enter"} {
		if moved.Options[i].Key != want {
			t.Errorf("Reject selected, option %d: %+v, want %q", i, moved.Options[i], want)
		}
	}
	b, _ := os.ReadFile(filepath.Join("testdata", "screens", "opencode_confirm_reject_selected.ansi"))
	back := ParseDialog(p, strings.Replace(strings.Replace(string(b), "\x1b[38;5;8mAllow once", "\x1b[48;5;215m\x1b[38;5;232mAllow once\x1b[48;5;234m", 1),
		"\x1b[48;5;215m \x1b[38;5;232mReject", "\x1b[48;5;234m \x1b[38;5;8mReject", 1))
	if back == nil || back.Options[0].Key != "Enter" || back.DialogID == moved.DialogID {
		t.Errorf("the selection moved back, dialog %+v (id before %s)", back, moved.DialogID)
	}
	// Without its colours the row is read, but no option can be answered.
	b, _ = os.ReadFile(filepath.Join("testdata", "screens", "opencode_confirm_bash.ansi"))
	if d := ParseDialog(p, nudge.StripANSI(string(b))); d == nil || d.Options[0].Key != "" || d.ApproveKey != "" {
		t.Errorf("plain screen: %+v", d)
	}
}

func TestCellStyles(t *testing.T) {
	text, st := cellStyles("a\x1b[48;5;215mb\x1b[7mc\x1b[0md\x1b]0;title\x07e\x1b[44mf\x1b[38;2;1;2;3mg\x1b[49mh")
	if text != "abcdefgh" {
		t.Fatalf("text %q", text)
	}
	want := []string{";false", "5:215;false", "5:215;true", ";false", ";false", "44;false", "44;false", ";false"}
	for i := range want {
		if st[i] != want[i] {
			t.Errorf("%c: %q, want %q", text[i], st[i], want[i])
		}
	}
}

// screen reads a recorded screen.
func screen(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "screens", file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestParseDialogLiveOnly: a dialog is the live one at the bottom of the screen. Words
// that read as a dialog with anything but the footer below them (a dialog the pack does
// not know, a y/n prompt, options run together) are none, whatever the classifier says.
func TestParseDialogLiveOnly(t *testing.T) {
	packs, err := LoadPacks("")
	if err != nil {
		t.Fatal(err)
	}
	claude, codex := screen(t, "claude_confirm_bash.ansi"), screen(t, "codex_confirm_exec.txt")
	plan := "\n Ready to code?\n\n Would you like to proceed?\n\n ❯ 1. Yes, and auto-accept edits\n   2. Yes, and manually approve edits\n   3. No, keep planning\n"
	prose := "● The dialog reads:\n\n  Bash command\n\n    touch auto.txt\n    Create the file\n\n  Do you want to proceed?\n  ❯ 1. Yes\n    2. No\n"
	tests := []struct {
		pack, screen string
		live         bool
	}{
		{"claude", claude, true},
		{"codex", codex, true},
		{"claude", claude + plan, false},
		{"claude", prose + plan, false},
		{"claude", prose + "  ❯ 1. Yes, and auto-accept edits\n    2. No, keep planning\n", false}, // run together
		{"claude", prose + "\n  Continue? (y/n)\n", false},
		{"claude", prose + "  Continue? (y/n)\n", false}, // not indented as a label goes on
		{"codex", strings.Replace(codex, "Press enter to confirm or esc to cancel", "Overwrite? (y/N)", 1), false},
		{"claude", prose + "\n  Esc to cancel\n", true}, // the footer alone: prose that ends the screen is one
	}
	for i, tt := range tests {
		if d := ParseDialog(packs[tt.pack], tt.screen); (d != nil) != tt.live {
			t.Errorf("#%d: %s: got %+v, want live %v", i, tt.pack, d, tt.live)
		}
	}
}

// TestDialogCommand: the dialog's command is read from where the CLI draws it, apart
// from the agent's own words (Claude Code's grey description, Codex's reason); when the
// two cannot be told apart the command holds both lines (so a rule for one command
// cannot match it) or is unknown.
func TestDialogCommand(t *testing.T) {
	packs, err := LoadPacks("")
	if err != nil {
		t.Fatal(err)
	}
	claude, codex := screen(t, "claude_confirm_bash.ansi"), screen(t, "codex_confirm_exec.txt")
	claude332 := screen(t, "claude_2_1_332_confirm_bash.ansi")
	grey := "\x1b[38;5;246m"
	tests := []struct {
		pack, screen, want string
	}{
		{"claude", claude, "touch approved.txt"},
		// Claude Code 2.1.332: the description above the command, dashed rules around it.
		{"claude", claude332, "touch approved.txt"},
		// A command line below the command's closing rule and a description: not what it draws.
		{"claude", strings.Replace(claude332, "Do you want", "\x1b[38;5;246mcheck it\n\x1b[39m curl x | sh\n Do you want", 1), ""},
		{"codex", codex, "touch approved.txt"},
		{"gemini", screen(t, "gemini_confirm_shell.txt"), "touch denied.txt"},
		{"opencode", screen(t, "opencode_confirm_bash.ansi"), "touch x.txt"},
		// The description names the command a rule approves; the command is another.
		{"claude", strings.Replace(strings.Replace(claude, "   touch approved.txt", "   rm -rf ~", 1),
			grey+"Run", grey+"touch auto.txt"+"\x1b[39m "+grey+"Run", 1), "rm -rf ~"},
		// Without styles (the agent's colours off) the description cannot be told from
		// the command: none is read, and no rule answers the dialog.
		{"claude", nudge.StripANSI(claude), ""},
		// A command line below the description: not what Claude Code draws.
		{"claude", strings.Replace(claude, "a\x1b[39m \x1b[38;5;246mcommand\n", "a\x1b[39m \x1b[38;5;246mcommand\n\x1b[39m   curl x | sh\n", 1), ""},
		// The reason holds a "$ " line of its own: which is the command is unknown.
		{"codex", strings.Replace(codex, "Reason: The stand-in asks to run touch approved.txt", "Reason: fine\n\n  $ touch auto.txt", 1), ""},
		{"codex", strings.Replace(codex, "$ touch approved.txt", "$ touch approved.txt; curl x | sh", 1), "touch approved.txt; curl x | sh"},
	}
	for i, tt := range tests {
		d := ParseDialog(packs[tt.pack], tt.screen)
		if d == nil {
			t.Fatalf("#%d: %s: no dialog", i, tt.pack)
		}
		if d.Command != tt.want {
			t.Errorf("#%d: %s: command %q, want %q", i, tt.pack, d.Command, tt.want)
		}
	}
}
