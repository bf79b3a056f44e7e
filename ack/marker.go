package ack

import (
	"github.com/nudgehq/nudge"
)

// Marker is the ack marker's prefix; the trigger id follows it directly.
const Marker = "ACK_TRIGGER:"

// MaxIDLen is the longest id a Matcher reports; a longer run of id bytes after the
// marker is ignored as a whole. It equals inject.MaxFieldLen (ack does not import
// inject, whose pipeline consumes acks).
const MaxIDLen = 128

// Matcher finds ACK_TRIGGER:<id> in one pane's output stream. It strips ANSI/VT
// escapes inline (as nudge.Plain does), so an escape sequence inside the marker
// or the id does not hide it, and it keeps its state across Feed calls, so a marker
// split over any number of chunks is found. The match is exact (case-sensitive).
//
// The id is the longest run of bytes in [A-Za-z0-9_.:@/-] after the marker, with
// trailing '.' and ':' removed (an agent may end a sentence with the marker). It is
// reported only when a byte that cannot extend it arrives (or at Flush): an id byte
// at the end of a chunk may continue in the next one.
//
// The zero Matcher is ready to use. A Matcher is not safe for concurrent use; one
// Matcher serves one pane. It does not allocate.
type Matcher struct {
	plain   nudge.Plain
	matched int // bytes of Marker matched so far
	inID    bool
	tooLong bool
	n       int
	id      [MaxIDLen]byte
}

// Feed scans chunk and calls found for each complete marker id. id is valid only
// during the call. found must not call Feed or Flush on m.
func (m *Matcher) Feed(chunk []byte, found func(id []byte)) {
	for _, c := range chunk {
		if t, ok := m.plain.Step(c); ok {
			m.text(t, found)
		}
	}
}

// Flush reports an id still waiting at the end of the stream (the pane went quiet,
// or the stream ends) and clears the pending state. The escape state is kept.
func (m *Matcher) Flush(found func(id []byte)) {
	if m.inID {
		m.endID(found)
	}
	m.matched = 0
}

// Reset forgets all state, e.g. after the output stream was resynchronised.
func (m *Matcher) Reset() { *m = Matcher{} }

func (m *Matcher) text(c byte, found func(id []byte)) {
	if m.inID {
		if nudge.IsIDByte(c) {
			m.addID(c)
			return
		}
		m.endID(found)
	}
	switch {
	case c == Marker[m.matched]:
		m.matched++
		if m.matched == len(Marker) {
			m.matched, m.inID = 0, true
		}
	case c == Marker[0]: // 'A' occurs only at the start of Marker
		m.matched = 1
	default:
		m.matched = 0
	}
}

func (m *Matcher) addID(c byte) {
	if m.n == len(m.id) {
		m.tooLong = true
		return
	}
	m.id[m.n] = c
	m.n++
}

func (m *Matcher) endID(found func(id []byte)) {
	n := m.n
	for n > 0 && (m.id[n-1] == '.' || m.id[n-1] == ':') {
		n--
	}
	if n > 0 && !m.tooLong {
		found(m.id[:n])
	}
	m.inID, m.tooLong, m.n = false, false, 0
}
