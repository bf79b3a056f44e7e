package ack

import (
	"strings"
	"unicode"

	"github.com/nudgehq/nudge"
)

// MaxJoin is how many following lines OnScreen joins to a line whose marker the agent's
// TUI wrapped (a TUI wraps its own text: tmux's capture -J cannot join those lines).
const MaxJoin = 3

// OnScreen reports whether a pane capture shows the ack marker ACK_TRIGGER:<id> as the
// agent composed it. It is the check made before any retry or fallback: a TUI that
// redraws by diff (Ink, ratatui) need not write the marker as one contiguous run of
// output, so the stream Matcher can miss what the screen shows.
//
// lines is a capture, oldest first (scrollback, then the screen; tmux -J joins the lines
// tmux wrapped). The id is read as the Matcher reads it: the longest run of id bytes
// after the marker, trailing '.' and ':' removed, and must equal id. A marker the TUI
// wrapped (inside the word or the id) is reassembled from up to MaxJoin following lines,
// each stripped of its leading blanks and border glyphs.
//
// Only what is drawn from the trigger's own (last) echo on is read, when that echo is on
// screen: a marker drawn before the prompt was typed acks nothing.
//
// The echo of the trigger never counts: the typed text never holds ACK_TRIGGER followed
// by a colon (package inject rejects the word in a prompt, and the ack hint writes a comma
// after it); lines inside an echoed envelope ([BRIDGE_TRIGGER id=… to [/BRIDGE_TRIGGER])
// are skipped whole; and after an envelope whose end is not on screen (a TUI that cut
// it), lines are never joined, so no wrapped prompt text can be reassembled into a
// marker.
func OnScreen(lines []string, id string) bool {
	if id == "" || len(id) > MaxIDLen {
		return false
	}
	echo := echoLines(lines)
	for i := ownEcho(lines, id); i < len(lines); i++ {
		line := lines[i]
		if echo[i] == echoClosed {
			continue
		}
		first := trimEnd(line)
		if !strings.Contains(first, Marker[:1]) {
			continue
		}
		// The line alone, then the line with its continuations.
		if markerIn(first, len(first), id) {
			return true
		}
		if echo[i] == echoOpen {
			continue
		}
		joined := first
		for k := i + 1; k < len(lines) && k <= i+MaxJoin && echo[k] == notEcho; k++ {
			joined += trimStart(trimEnd(lines[k]))
		}
		if len(joined) > len(first) && markerIn(joined, len(first), id) {
			return true
		}
	}
	return false
}

// ownEcho returns the line of the last echo of trigger id's envelope head on screen
// ("[BRIDGE_TRIGGER id=<id>"), or 0 when none is: a marker above it was drawn before the
// prompt was typed (the agent guessed the id of a trigger queued for it) and acks nothing.
func ownEcho(lines []string, id string) int {
	head := envelopeHead + id
	for i := len(lines) - 1; i >= 0; i-- {
		for s := lines[i]; ; {
			k := strings.Index(s, head)
			if k < 0 {
				break
			}
			s = s[k+len(head):]
			if s == "" || !nudge.IsIDByte(s[0]) {
				return i
			}
		}
	}
	return 0
}

// markerIn reports whether s holds the marker for id starting before s[limit] (in the
// first line of a join), its id being id exactly, or, when the id runs past the first
// line, beginning with id (the continuation may carry on with other text).
func markerIn(s string, limit int, id string) bool {
	for off := 0; off < limit; {
		k := strings.Index(s[off:], Marker)
		if k < 0 || off+k >= limit {
			return false
		}
		start := off + k + len(Marker)
		end := start
		for end < len(s) && nudge.IsIDByte(s[end]) {
			end++
		}
		got := strings.TrimRight(s[start:end], ".:")
		switch {
		case got == id:
			return true
		case end > limit && start < limit && limit-start < len(id) && strings.HasPrefix(s[start:end], id) &&
			strings.HasPrefix(id, s[start:limit]):
			return true // wrapped inside the id
		}
		off = start
	}
	return false
}

const (
	notEcho    = iota
	echoClosed // inside an echoed envelope whose end is on screen
	echoOpen   // at or after an envelope's start whose end is not on screen
)

// echoLines classifies the lines as inside a closed echoed envelope, after the start of
// one whose end is not on screen (a TUI that cut a long prompt), or neither. The
// envelope's start and end are found also when the TUI wrapped them onto the next line.
func echoLines(lines []string) []uint8 {
	echo := make([]uint8, len(lines))
	open := -1
	for i := 0; i < len(lines); i++ {
		if open < 0 {
			if at, ok := spans(lines, i, "[BRIDGE_TRIGGER id="); ok {
				open = i
				i = at - 1 // look for the end from the line the start ends on
			}
			continue
		}
		if at, ok := spans(lines, i, "/BRIDGE_TRIGGER]"); ok {
			for k := open; k <= at; k++ {
				echo[k] = echoClosed
			}
			open = -1
			i = at
		}
	}
	for k := max(open, 0); open >= 0 && k < len(lines); k++ {
		echo[k] = echoOpen
	}
	return echo
}

// spans reports whether needle is on line i, or begins on it and ends on one of the
// MaxJoin lines after it (a TUI wrapped it), and the line it ends on.
func spans(lines []string, i int, needle string) (int, bool) {
	if strings.Contains(lines[i], needle) {
		return i, true
	}
	cur := trimEnd(lines[i])
	j := cur
	for k := i + 1; k < len(lines) && k <= i+MaxJoin; k++ {
		j += trimStart(trimEnd(lines[k]))
		if x := strings.Index(j, needle); x >= 0 {
			return k, x < len(cur)
		}
	}
	return 0, false
}

func trimEnd(s string) string {
	return strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsSpace(r) || isBorder(r) })
}

func trimStart(s string) string {
	return strings.TrimLeftFunc(s, func(r rune) bool { return unicode.IsSpace(r) || isBorder(r) })
}

// isBorder reports whether r is a glyph a TUI draws around or before wrapped text (box
// borders, quote bars, bullets, prompt arrows). None is an id byte.
func isBorder(r rune) bool {
	switch r {
	case '|', '>', '│', '┃', '║', '▌', '▎', '❯', '›', '»', '⎿', '⏺', '●', '•', '·', '✦', '*':
		return true
	}
	return false
}
