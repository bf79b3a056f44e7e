package detector

import (
	"strings"
	"testing"
)

// TestParseScreenStylesOnlyForStyledRows: a row with no styled cell keeps no style per
// cell (a 400x50 screen of them was most of what a readiness look allocated), and the
// styles of a styled row are kept cell by cell, the cells before the first styled one
// included.
func TestParseScreenStylesOnlyForStyledRows(t *testing.T) {
	plain := strings.Repeat("x", 400)
	ls := parseScreen(plain + "\n" + "ab\x1b[2mcd\x1b[0me\n")
	if len(ls) != 2 {
		t.Fatalf("%d rows", len(ls))
	}
	if ls[0].styled || ls[0].styles != nil || ls[0].plain != plain {
		t.Fatalf("plain row: styled=%v %d styles", ls[0].styled, len(ls[0].styles))
	}
	want := []bool{false, false, true, true, false}
	if !ls[1].styled || ls[1].plain != "abcde" {
		t.Fatalf("styled row: %+v", ls[1])
	}
	for k, dim := range want {
		if ls[1].style(k).dim != dim {
			t.Errorf("cell %d dim=%v, want %v", k, ls[1].style(k).dim, dim)
		}
	}
	if ls[0].style(3) != (style{}) {
		t.Error("a plain row's cell has a style")
	}
	screen := strings.Repeat(plain+"\n", 50)
	if a := testing.AllocsPerRun(20, func() { parseScreen(screen) }); a > 110 {
		t.Errorf("%.0f allocations for a 400x50 plain screen, want at most 2 per row", a)
	}
}

// TestApplySGRAsSplit: the parameters read in place give the style the split reading
// gives, for colons and semicolons alike.
func TestApplySGRAsSplit(t *testing.T) {
	for _, params := range []string{"", "0", "2", "22", "1;2", "39", "31", "97", "38;5;245", "38:5:245",
		"2;38;5;8;48;5;236", "38;2;10;20;30", "38:2:10:20:30", "48;2;1;2;3;38;5;9", "58;5;1;2", "38;5",
		"38;2;1;2", ";;2;", "0;2;38;5;240;22", strings.Repeat("1;", 40) + "2"} {
		var a, b style
		a.fg, b.fg = "31", "31"
		applySGR(params, &a)
		applySGRSplit(params, &b)
		if a != b {
			t.Errorf("%q: %+v, split reading %+v", params, a, b)
		}
	}
}

// TestParseScreenAllocations: a styled 80x24 screen is parsed in a handful of
// allocations, not a few per row or per escape sequence.
func TestParseScreenAllocations(t *testing.T) {
	row := "\x1b[2m> \x1b[0m\x1b[38;5;245mtype a message\x1b[39m" + strings.Repeat(" ", 60)
	screen := strings.Repeat(row+"\n", 24)
	if a := testing.AllocsPerRun(20, func() { parseScreen(screen) }); a > 40 {
		t.Errorf("%.0f allocations for a styled 80x24 screen", a)
	}
}
