package fuzz

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/ack"
	"github.com/nudgehq/nudge/inject"
)

// streamCorpus seeds FuzzPlain and FuzzMatcher.
var streamCorpus = []string{
	"plain text\r\n",                                    // nothing to strip
	"\x1b[1;31mred\x1b[0m \x1b[10;5Hmoved",              // SGR, cursor motion
	"\x1b]0;title\x07\x1b]8;;u\x1b\\link\x1b]8;;\x1b\\", // OSC ended by BEL and by ST
	"\x1bP1$r\x1b\\\x1b_apc\x07\x1b(B\x1b=",             // DCS, APC, charset, 2-byte ESC
	"ok ACK_TRIGGER:t-1\n",                              // a marker
	"ACK_\x1b[1mTRIG\x1b[0mGER:id.9.",                   // a marker with an escape inside
	"\x1b]0;ACK_TRIGGER:hidden\x07",                     // a marker inside an OSC title
	"ACK_TRIGGER:ACK_TRIGGER:x AACK_TRIGGER:y",          // nested and overlapping starts
	"\x1b[12\x18ACK_TRIGGER:z\x1b",                      // CAN aborts a CSI; ESC at the end
}

// cutChunks splits b into chunks at positions drawn from cuts.
func cutChunks(b []byte, cuts uint64) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n := int(cuts%7) + 1
		if cuts%5 == 0 {
			n = len(b)
		}
		cuts = cuts/7 ^ cuts<<13 ^ 0x9e3779b97f4a7c15
		n = min(n, len(b))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// matchIDs feeds b to a Matcher in chunks drawn from cuts, then flushes.
func matchIDs(b []byte, cuts uint64) []string {
	var m ack.Matcher
	var ids []string
	found := func(id []byte) { ids = append(ids, string(id)) }
	for _, c := range cutChunks(b, cuts) {
		m.Feed(c, found)
	}
	m.Flush(found)
	return ids
}

// naiveIDs is the reference Matcher: strip the whole input, then search it.
func naiveIDs(b []byte) []string {
	var p nudge.Plain
	text := p.Write(nil, b)
	var ids []string
	for {
		i := bytes.Index(text, []byte(ack.Marker))
		if i < 0 {
			return ids
		}
		text = text[i+len(ack.Marker):]
		n := 0
		for n < len(text) && nudge.IsIDByte(text[n]) {
			n++
		}
		id := bytes.TrimRight(text[:n], ".:")
		if len(id) > 0 && n <= ack.MaxIDLen {
			ids = append(ids, string(id))
		}
		text = text[n:]
	}
}

func FuzzPlain(f *testing.F) {
	for _, s := range streamCorpus {
		f.Add([]byte(s), uint64(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, cuts uint64) {
		var p nudge.Plain
		whole := p.Write(nil, in)
		for _, c := range whole {
			if c == 0x1b || c == 0x7f || (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
				t.Fatalf("control %#x in output %q", c, whole)
			}
		}
		var q nudge.Plain
		var parts []byte
		for _, c := range cutChunks(in, cuts) {
			parts = q.Write(parts, c)
		}
		if !bytes.Equal(parts, whole) {
			t.Fatalf("split changed the output:\nwhole %q\nparts %q", whole, parts)
		}
	})
}

func FuzzMatcher(f *testing.F) {
	for _, s := range streamCorpus {
		f.Add([]byte(s), uint64(11), "t-1", "fix it")
	}
	f.Fuzz(func(t *testing.T, in []byte, cuts uint64, id, body string) {
		want := naiveIDs(in)
		if got := matchIDs(in, cuts); !reflect.DeepEqual(got, want) {
			t.Fatalf("chunked ids %q, want %q (input %q)", got, want, in)
		}
		if body, err := inject.Sanitize(body, 0); err == nil {
			w := inject.Envelope{ID: id, AckHint: true}.Wrap(body)
			if ids := matchIDs([]byte(w), cuts); len(ids) != 0 {
				t.Fatalf("echo of an envelope acked %q: %q", ids, w)
			}
			// The echo, alone and amid the fuzzed output, never yields the envelope's id.
			echo := append(append(append([]byte{}, in...), w...), '\n')
			for _, got := range matchIDs(echo, cuts) {
				if got == inject.Field(id) && !contains(want, got) {
					t.Fatalf("echo acked %q: %q", got, w)
				}
			}
		}
	})
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// FuzzOnScreenNeverEcho: the echo of a trigger, however a TUI wraps it and whether or
// not its end is on screen, never shows the trigger's ack marker; the marker itself, so
// wrapped, always does.
func FuzzOnScreenNeverEcho(f *testing.F) {
	f.Add("read the unread messages", "trg_1", uint8(20), false)
	f.Add("two\nlines ACK", "a:b.c", uint8(7), true)
	f.Add(strings.Repeat("x", 300), "trg_20261122T101010_abcdef", uint8(1), false)
	f.Fuzz(func(t *testing.T, body, id string, width uint8, cut bool) {
		text, err := inject.Sanitize(body, 4096)
		if err != nil {
			return
		}
		fid := inject.Field(id)
		env := inject.Envelope{ID: id, Reason: "r", AckHint: true}.Wrap(text)
		w := int(width%80) + 1
		lines := wrapRunes(env, w)
		if cut && len(lines) > 1 {
			lines = lines[:len(lines)-1]
		}
		if ack.OnScreen(lines, fid) {
			t.Fatalf("the echo counts as an ack for %q: %q", fid, lines)
		}
		reply := wrapRunes("ok "+ack.Marker+fid, w)
		// The id as the Matcher reads it (no trailing '.' or ':'); lines after a cut echo
		// are never joined.
		whole := strings.TrimRight(fid, ".:") == fid && len(reply) <= ack.MaxJoin+1 && !cut && w >= 8
		if whole && !ack.OnScreen(append(lines, reply...), fid) {
			t.Fatalf("the marker wrapped at %d is missed: %q", w, reply)
		}
	})
}

// wrapRunes cuts s into lines of at most w runes, as a TUI wraps its text (hard line
// ends, which tmux's capture -J cannot join).
func wrapRunes(s string, w int) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		r := []rune(l)
		for len(r) > w {
			out = append(out, string(r[:w]))
			r = r[w:]
		}
		out = append(out, string(r))
	}
	return out
}
