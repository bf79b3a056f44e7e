package controlmode

import (
	"bytes"
	"testing"
)

func TestUnescape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain text", "plain text"},
		// exp11 from the reference: A\tB\\C\e[1mD\x7fE é F\x01\n through a tty.
		{"A\\011B\\134C\\033[1mD\x7fE\xc3\xa9 F\\001\\015\\012", "A\tB\\C\x1b[1mD\x7fE\xc3\xa9 F\x01\r\n"},
		{"\\000\\377", "\x00\xff"},
		{"\\400", "\\400"}, // out of byte range: kept
		{"\\12", "\\12"},   // truncated
		{"end\\", "end\\"},
		{"\\9999", "\\9999"},
		{"\\\\134", "\\\\"},
	}
	for i, tt := range tests {
		if got := string(Unescape(nil, []byte(tt.in))); got != tt.want {
			t.Errorf("#%d: Unescape(%q): got %q, want %q", i, tt.in, got, tt.want)
		}
	}
}

func TestEscapeRoundTrip(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	esc := Escape(nil, all)
	for _, b := range esc {
		if b < ' ' {
			t.Fatalf("escaped form holds control byte %#x", b)
		}
	}
	if got := Unescape(nil, esc); !bytes.Equal(got, all) {
		t.Errorf("round trip: got %q, want %q", got, all)
	}
	if got, want := string(Escape(nil, []byte("a\\\n"))), `a\134\012`; got != want {
		t.Errorf("Escape: got %q, want %q", got, want)
	}
}

func TestUnescapeAppendsWithoutAllocating(t *testing.T) {
	src := []byte("hello\\015\\012world \\033[1m bold")
	dst := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() { dst = Unescape(dst[:0], src) })
	if allocs != 0 {
		t.Errorf("Unescape allocated %v times per call", allocs)
	}
}

func TestUTF8Carry(t *testing.T) {
	tests := []struct {
		in, out, held string
	}{
		{"abc", "abc", ""},
		{"ab\xc3", "ab", "\xc3"},
		{"ab\xe6\x97", "ab", "\xe6\x97"},
		{"\xf0\x9f\x98", "", "\xf0\x9f\x98"},
		{"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80", ""},
		{"a\xff", "a\xff", ""}, // invalid lead: never held
		{"a\x80\x80", "a\x80\x80", ""},
		{"\xc3\xa9", "\xc3\xa9", ""},
	}
	for i, tt := range tests {
		var u utf8Carry
		out := u.hold([]byte(tt.in))
		if string(out) != tt.out || string(u.b[:u.n]) != tt.held {
			t.Errorf("#%d: hold(%q): got %q+%q, want %q+%q", i, tt.in, out, u.b[:u.n], tt.out, tt.held)
		}
	}
}
