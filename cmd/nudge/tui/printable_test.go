package tui

import "testing"

func TestPrintableText(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                          "plain",
		"two\nlines\tand a tab":          "two\nlines\tand a tab",
		"red \x1b[31malert\x1b[0m\r\n":   `red \x1b[31malert\x1b[0m\r` + "\n",
		"c1 \u009b2J and \"quotes\" \\ ": `c1 \u009b2J and "quotes" \ `,
	} {
		if got := PrintableText(in); got != want {
			t.Errorf("PrintableText(%q) = %q, want %q", in, got, want)
		}
	}
}
