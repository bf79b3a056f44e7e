package standin

import (
	"fmt"
	"strings"
)

// Prompt is one trigger body of a full-turn run.
type Prompt struct{ Kind, Body string }

// Prompts returns a trigger body of every kind a full-turn run sends: a file mention,
// a trailing ';', quotes and $HOME, CJK and emoji, several lines, and sizes from 1 KiB
// to 16 KiB single- and multi-line, then maxKB KiB multi-line if maxKB > 16.
func Prompts(maxKB int) []Prompt {
	ps := []Prompt{
		{"at-path", "look at @pkg/file.go and say what it does"},
		{"semicolon", "run the tests;"},
		{"quotes", `it's "quoted", 'single' and $HOME with \backslash and ` + "`backticks`"},
		{"cjk-emoji", "日本語のテキストを読んで 🚀✅ — 中文 한국어"},
		{"multi-line", "first line\nsecond line\n\n  indented fourth\nlast"},
		{"1KiB", Filler(1<<10, false)},
		{"1KiB-lines", Filler(1<<10, true)},
		{"4KiB", Filler(4<<10, false)},
		{"4KiB-lines", Filler(4<<10, true)},
		{"5KiB", Filler(5<<10, false)},
		{"8KiB", Filler(8<<10, false)},
		{"8KiB-lines", Filler(8<<10, true)},
		{"16KiB", Filler(16<<10, false)},
		{"16KiB-lines", Filler(16<<10, true)},
	}
	if maxKB > 16 {
		ps = append(ps, Prompt{fmt.Sprintf("%dKiB-lines", maxKB), Filler(maxKB<<10, true)})
	}
	return ps
}

// Filler is n bytes of numbered words, in lines of ten words or on one line. It ends
// on a non-blank byte (the sanitizer trims trailing blanks).
func Filler(n int, lines bool) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		switch {
		case b.Len() == 0:
		case lines && i%10 == 0:
			b.WriteByte('\n')
		default:
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "w%05d", i)
	}
	return b.String()[:n-1] + "."
}
