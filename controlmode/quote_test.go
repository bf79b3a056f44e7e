package controlmode

import (
	"errors"
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"plain", "'plain'"},
		{"it's", `'it'\''s'`},
		{"'", `''\'''`},
		{"a;b {x} #{pane_id} $HOME ~ \\ \"q\" %if é", `'a;b {x} #{pane_id} $HOME ~ \ "q" %if é'`},
	}
	for i, tt := range tests {
		got, err := Quote(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("#%d: Quote(%q): got %q, %v, want %q", i, tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"a\nb", "\r", "x\x00", "\xff", "\xe6\x97", "a\xc3 b"} {
		if _, err := Quote(bad); !errors.Is(err, ErrUnquotable) {
			t.Errorf("Quote(%q): got %v, want ErrUnquotable", bad, err)
		}
	}
}

func TestSendKeys(t *testing.T) {
	tests := []struct {
		target, text string
		want         []string
	}{
		{"%1", "", nil},
		{"%1", "hello", []string{"send-keys -t '%1' -l -- 'hello'"}},
		{"%1", "-n it's", []string{`send-keys -t '%1' -l -- '-n it'\''s'`}},
		{"%1", "a\nb\r\n", []string{
			"send-keys -t '%1' -l -- 'a'", "send-keys -t '%1' -H 0a",
			"send-keys -t '%1' -l -- 'b'", "send-keys -t '%1' -H 0d 0a"}},
		{"%1", "\x00é\xff\xfeok", []string{
			"send-keys -t '%1' -H 00", "send-keys -t '%1' -l -- 'é'",
			"send-keys -t '%1' -H ff fe", "send-keys -t '%1' -l -- 'ok'"}},
		{"s:w.0", "x", []string{"send-keys -t 's:w.0' -l -- 'x'"}},
		{"bad\ntarget", "x", nil},
	}
	for i, tt := range tests {
		got := SendKeys(tt.target, tt.text)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("#%d: SendKeys(%q, %q): got %q, want %q", i, tt.target, tt.text, got, tt.want)
		}
		for _, line := range got {
			if err := checkCommand(line); err != nil {
				t.Errorf("#%d: SendKeys line %q fails checkCommand: %v", i, line, err)
			}
		}
	}
}

func TestCheckCommand(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
	}{
		{"display -p hi", true},
		{"display -p 'a;b'", true},
		{`display -p "a;b \" ;"`, true},
		{"list-panes -F '#{pane_id}'", true},
		{"send-keys -t %1 -l -- 'x'", true},
		{"display -p 'unterminated", true}, // a parse error: still exactly one reply
		{"", false},
		{"   ", false},
		{"# comment", false},
		{"%if 1", false},
		{"display a ; display b", false},
		{"display a;", false},
		{`display a\;`, false},
		{`display \' ; kill-server`, false},
		{`display "x" ; kill-server`, false},
		{"display '' ; kill-server", false},
		{"if -F 1 'display x'", false},
		{"if-shell true x", false},
		{"source-file /dev/null", false},
		{"source /dev/null", false},
		{"display {x}", false},
		{"list-panes -F #{pane_id}", false},
		{"display a\nkill-server", false},
		{"display a\r", false},
		{"display a\x00", false},
		{"display '\xe6\x97' ; kill-server", false},
	}
	for i, tt := range tests {
		err := checkCommand(tt.line)
		if (err == nil) != tt.ok {
			t.Errorf("#%d: checkCommand(%q): got %v, want ok=%v", i, tt.line, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrUnsafeCommand) {
			t.Errorf("#%d: error %v is not ErrUnsafeCommand", i, err)
		}
	}
}
