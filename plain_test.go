package nudge

import (
	"bytes"
	"testing"
)

func plain(s string) string {
	var p Plain
	return string(p.Write(nil, []byte(s)))
}

func TestPlain(t *testing.T) {
	tests := []struct{ in, want string }{
		{"hello\r\nworld\t!", "hello\r\nworld\t!"},
		{"\x1b[1;31mred\x1b[0m", "red"},
		{"a\x1b[10;5Hb", "a b"},
		{"a\x1b[3Cb", "a b"},
		{"\x1b]0;title\x07x", "x"},
		{"\x1b]8;;http://e\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1bP1$r0m\x1b\\y", "y"},
		{"\x1b_apc\x1b\\\x1b^pm\x07\x1bXsos\x1b\\z", "z"},
		{"\x1b(B\x1b)0\x1b=\x1b>\x1b7\x1b8q", "q"},
		{"\x1b[?2004h\x1b[?25l日本\x1b[?25h", "日本"},
		{"\x00\x01\x07\x08\x7fv", "v"},
		{"\x1b[12\x18after", "after"},
		{"\x1b]0;t\x1b[1mx", "x"}, // ESC aborts the string, starts a CSI
		{"\x1b\x1b[mw", "w"},
		{"\x1b#8e", "e"},
	}
	for i, tt := range tests {
		if got := plain(tt.in); got != tt.want {
			t.Errorf("#%d: plain(%q) = %q, want %q", i, tt.in, got, tt.want)
		}
	}
}

func TestPlainSplit(t *testing.T) {
	in := []byte("a\x1b[1;31mb\x1b]0;t\x1b\\c\x1bP..\x07d\x1b(Be\x1b[2Cf")
	want := plain(string(in))
	for i := 0; i <= len(in); i++ {
		for j := i; j <= len(in); j++ {
			var p Plain
			out := p.Write(nil, in[:i])
			out = p.Write(out, in[i:j])
			out = p.Write(out, in[j:])
			if string(out) != want {
				t.Fatalf("split %d,%d: got %q, want %q", i, j, out, want)
			}
		}
	}
}

func TestPlainNoAlloc(t *testing.T) {
	src := bytes.Repeat([]byte("text \x1b[1mbold\x1b[0m \x1b]0;t\x07\r\n"), 100)
	dst := make([]byte, 0, len(src))
	var p Plain
	if n := testing.AllocsPerRun(100, func() { dst = p.Write(dst[:0], src) }); n != 0 {
		t.Errorf("Write: %v allocs, want 0", n)
	}
}

func TestStripANSI(t *testing.T) {
	tests := []struct{ in, want string }{
		{"\x1b[1;31mred\x1b[0m plain", "red plain"},
		{"\x1b]0;title\x07after", "after"},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"a\tb\nc\rd\x00e\x7f", "a\tb\ncde"},
		{"\x1b[?1049h\x1b[Hscreen", " screen"}, // a cursor move keeps words apart
		{"unicode ✓ stays", "unicode ✓ stays"},
		{"\x1bP1$r0m\x1b\\dcs gone", "dcs gone"},
		{"\x1b_apc\x07x", "x"},
		{"\x1b(Bcharset", "charset"},
		{"\x1b]unterminated", ""}, // an OSC string never ended: a terminal shows none of it
		{"c1 \u009b31m", "c1 31m"},
		{"", ""},
	}
	for i, tt := range tests {
		if got := StripANSI(tt.in); got != tt.want {
			t.Errorf("#%d: StripANSI(%q) = %q, want %q", i, tt.in, got, tt.want)
		}
	}
}
