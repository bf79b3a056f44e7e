package tui

import "testing"

func TestPrintableText(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                          "plain",
		"two\nlines\tand a tab":          "two\nlines\tand a tab",
		"red \x1b[31malert\x1b[0m\r\n":   `red \x1b[31malert\x1b[0m\r` + "\n",
		"c1 \u009b2J and \"quotes\" \\ ": `c1 \u009b2J and "quotes" \ `,
		// A reply that reorders what the terminal shows: its bidi controls are removed.
		"ok \u202egnp.exe\u202c and \u2066x\u2069": "ok gnp.exe and x",
	} {
		if got := PrintableText(in); got != want {
			t.Errorf("PrintableText(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPrintableBidi: a one-line text's bidi controls are escaped, not passed through.
func TestPrintableBidi(t *testing.T) {
	if got := Printable("a\u202eb"); got != `a\u202eb` {
		t.Errorf("Printable = %q", got)
	}
}
