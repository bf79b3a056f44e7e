package inject

import (
	"strings"
	"testing"
)

func TestField(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "-"},
		{"t-1.a:b@c/d_e", "t-1.a:b@c/d_e"},
		{"a b]c\nd=é", "a_b_c_d__"},
		{"x ACK_TRIGGER:y", "x_ACK-TRIGGER:y"},
		{"ack_trigger:ack_triggerx", "ack-trigger:ack-triggerx"},
		{strings.Repeat("z", 300), strings.Repeat("z", MaxFieldLen)},
	}
	for i, tt := range tests {
		if got := Field(tt.in); got != tt.want {
			t.Errorf("#%d: Field(%q) = %q, want %q", i, tt.in, got, tt.want)
		}
	}
}

func TestWrapOneLine(t *testing.T) {
	e := Envelope{ID: "t1", Thread: "th/2", Reason: "ci failed"}
	got := e.Wrap("fix the build")
	want := "[BRIDGE_TRIGGER id=t1 thread=th/2 reason=ci_failed] fix the build [/BRIDGE_TRIGGER]"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestWrapMultiLine(t *testing.T) {
	e := Envelope{ID: "t1", AckHint: true}
	got := e.Wrap("line one\n\nline three")
	lines := strings.Split(got, "\n")
	want := []string{"[BRIDGE_TRIGGER id=t1 thread=- reason=-]", "line one", "", "line three", "", "[/BRIDGE_TRIGGER]"}
	if len(lines) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if i != 4 && lines[i] != want[i] {
			t.Errorf("line %d: got %q, want %q", i, lines[i], want[i])
		}
	}
	if !strings.HasPrefix(lines[4], "(") || !strings.Contains(lines[4], "nudge ack t1") {
		t.Errorf("hint line: %q", lines[4])
	}
}

func TestWrapHintNeverHoldsMarker(t *testing.T) {
	for _, id := range []string{"t1", "ACK_TRIGGER:x", ":", "a:b", strings.Repeat(":", 200)} {
		got := Envelope{ID: id, Thread: id, Reason: id, AckHint: true}.Wrap("body")
		if strings.Contains(got, "ACK_TRIGGER:") {
			t.Errorf("id %q: envelope holds the marker: %q", id, got)
		}
		if !strings.Contains(got, "ACK_TRIGGER, then a colon, then "+Field(id)) {
			t.Errorf("id %q: hint missing: %q", id, got)
		}
	}
}

func TestInteractiveShell(t *testing.T) {
	for i, tt := range []struct {
		argv []string
		want bool
	}{
		{[]string{"bash", "--norc", "--noprofile"}, true},
		{[]string{"/bin/zsh", "-l"}, true},
		{[]string{"sh"}, true},
		{[]string{"sh", "-c", "exec cat"}, false},
		{[]string{"bash", "-lc", "make"}, false},
		{[]string{"bash", "script.sh"}, false},
		{[]string{"cat"}, false},
		{[]string{"python3", "-i"}, false},
		{nil, false},
	} {
		if got := InteractiveShell(tt.argv); got != tt.want {
			t.Errorf("#%d %q: got %v, want %v", i, tt.argv, got, tt.want)
		}
	}
	if got := ShellComment("a\nb"); got != "# a\n# b" {
		t.Errorf("ShellComment: %q", got)
	}
}
