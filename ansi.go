package nudge

import (
	"regexp"
	"strings"
)

// ansiRE matches CSI sequences; OSC, DCS, APC and PM strings (BEL- or ST-terminated: an
// unterminated one loses only its ESC and introducer); escape sequences with intermediate
// bytes (ESC ( B); and two-byte escape sequences (ESC 7, ESC M).
var ansiRE = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]P_^][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[ -/]+[0-~]|\x1b[0-~]`)

// StripANSI removes terminal escape sequences from s and the control bytes left over
// (C0, DEL and C1, keeping tab and newline), so captured text is plain: safe to print in
// another terminal, to match a line against, or to send to a classifier. It is the one
// ANSI stripper of the project (the detector's screen parser, which keeps styles, is
// a parser, not a stripper).
func StripANSI(s string) string {
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	s = ansiRE.ReplaceAllString(s, "")
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return -1
		}
		return r
	}, s)
}

func isControl(r rune) bool {
	return r != '\n' && r != '\t' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0))
}
