package act

import (
	"strings"
	"testing"
)

// TestQRText: the link's QR code has one line per two modules, every line as wide as the
// code with its quiet zone, and nothing but blocks and spaces.
func TestQRText(t *testing.T) {
	s := qrText("http://127.0.0.1:8088/pair#ARBLaHqKxIu081f4bhy4t9vubNeILDA47vPcixi89WE")
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) < 10 {
		t.Fatalf("%d lines:\n%s", len(lines), s)
	}
	w := len([]rune(lines[0]))
	for i, l := range lines {
		if n := len([]rune(l)); n != w || strings.Trim(l, "█▀▄ ") != "" {
			t.Errorf("#%d: %d runes %q, want %d of blocks", i, n, l, w)
		}
	}
	if (len(lines)-1)*2 > w || len(lines)*2 < w-1 {
		t.Errorf("%d lines for a code %d wide", len(lines), w)
	}
}
