package fuzz

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nudgehq/nudge/controlmode"
)

// controlmodeCorpus seeds FuzzParseLine, FuzzUnescape, FuzzQuote and FuzzSendKeys.
var controlmodeCorpus = []string{
	"%begin 1795304955 265 0", // a guard
	"%end 1795304955 265 1\r", // with the \r tmux may add
	"%output %0 A\\011B\\134C\\033[1mD\x7fE\xc3\xa9 F\\001\\015\\012", // exp11's escapes
	"%extended-output %3 120 future : data : with : colons",           // separator and future fields
	"%session-changed $0 a\\tb\\\\c\\nd e",                            // vis-encoded name
	"%client-session-changed /dev/pts/5 $1 work",                      // another client
	"%layout-change @1 b25d,80x24,0,0,0 b25d,80x24,0,0,0 ",            // empty flags, trailing space
	"%subscription-changed s $0 @1 2 %3 x y : v : w",                  // future fields, colons in value
	"%subscription-changed s $0 - - - :",                              // empty value
	"%window-add @99999999999999999999",                               // id overflow
	"%exit too far behind",                                            // reason
	"%pause %",                                                        // truncated id
	"%",                                                               // nothing
	"garbage \xff\xfe",                                                // not a notification
	"'; kill-server; '\x00\r\n#{pane_id} $HOME ~ { } \\",              // quoting bait
	"\xe6\x97'; kill-server; '",                                       // partial UTF-8 before a quote
}

func FuzzParseLine(f *testing.F) {
	for _, s := range controlmodeCorpus {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		in := append([]byte(nil), line...)
		ev, err := controlmode.ParseLine(line)
		trimmed := strings.TrimSuffix(strings.TrimSuffix(string(in), "\n"), "\r")
		if err != nil {
			var pe *controlmode.ProtocolError
			if ev != nil || !errors.As(err, &pe) || !errors.Is(err, controlmode.ErrProtocol) ||
				pe.Line != trimmed {
				t.Fatalf("ParseLine(%q): ev %#v, err %v", in, ev, err)
			}
			return
		}
		if ev == nil {
			t.Fatalf("ParseLine(%q): nil event and nil error", in)
		}
		before := fmt.Sprintf("%+v", ev)
		for i := range line { // the event must not alias the input
			line[i] = 'X'
		}
		if after := fmt.Sprintf("%+v", ev); after != before {
			t.Fatalf("ParseLine(%q): event aliases its input: %s became %s", in, before, after)
		}
		checkEvent(t, in, trimmed, ev)
	})
}

// checkEvent asserts properties of a successfully parsed line.
func checkEvent(t *testing.T, in []byte, trimmed string, ev controlmode.Event) {
	switch e := ev.(type) {
	case *controlmode.Unknown:
		if e.Line != trimmed {
			t.Fatalf("Unknown line %q, want %q", e.Line, trimmed)
		}
	case *controlmode.Guard:
		again := fmt.Sprintf("%%%s %d %d %d", e.Kind, e.Time, e.Number, e.Flags)
		ev2, err := controlmode.ParseLine([]byte(again))
		if g2, ok := ev2.(*controlmode.Guard); err != nil || !ok || *g2 != *e {
			t.Fatalf("guard %q did not round-trip via %q: %v %v", in, again, ev2, err)
		}
	case *controlmode.Output:
		if e.Pane < 0 || len(e.Data) > len(in) {
			t.Fatalf("output %q: pane %d, %d data bytes", in, e.Pane, len(e.Data))
		}
	case *controlmode.WindowAdd:
		if e.Window < -1 {
			t.Fatalf("window id %d from %q", e.Window, in)
		}
	case *controlmode.SubscriptionChanged:
		if e.Session < -1 || e.Window < -1 || e.WindowIndex < -1 || e.Pane < -1 {
			t.Fatalf("negative id from %q: %+v", in, e)
		}
		if !strings.HasSuffix(trimmed, e.Value) {
			t.Fatalf("subscription value %q is not the tail of %q", e.Value, trimmed)
		}
	}
}

func FuzzUnescape(f *testing.F) {
	for _, s := range controlmodeCorpus {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		esc := controlmode.Escape(nil, b)
		for _, c := range esc {
			if c < ' ' {
				t.Fatalf("Escape(%q) = %q holds control byte %#x", b, esc, c)
			}
		}
		if got := controlmode.Unescape(nil, esc); !bytes.Equal(got, b) {
			t.Fatalf("Unescape(Escape(%q)) = %q", b, got)
		}
		// Decoding arbitrary input never grows it and appends to dst.
		out := controlmode.Unescape([]byte("prefix"), b)
		if !bytes.HasPrefix(out, []byte("prefix")) || len(out)-6 > len(b) {
			t.Fatalf("Unescape(prefix, %q) = %q", b, out)
		}
		if !bytes.ContainsRune(b, '\\') && !bytes.Equal(out[6:], b) {
			t.Fatalf("Unescape changed %q without a backslash: %q", b, out[6:])
		}
	})
}

func FuzzQuote(f *testing.F) {
	for _, s := range controlmodeCorpus {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := controlmode.Quote(s)
		unquotable := strings.ContainsAny(s, "\n\r\x00") || !utf8.ValidString(s)
		if unquotable {
			if !errors.Is(err, controlmode.ErrUnquotable) {
				t.Fatalf("Quote(%q) = %q, %v; want ErrUnquotable", s, q, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Quote(%q): %v", s, err)
		}
		if strings.ContainsAny(q, "\n\r\x00") || len(q) < 2 || q[0] != '\'' || q[len(q)-1] != '\'' {
			t.Fatalf("Quote(%q) = %q: not one single-quoted token", s, q)
		}
		// Outside the quotes there is nothing but the \' of each embedded quote, so the
		// result is one token that tmux reads back as s.
		got, ok := unquote(q)
		if !ok || got != s {
			t.Fatalf("Quote(%q) = %q reads back as %q (ok=%v)", s, q, got, ok)
		}
	})
}

// unquote reads a token made only of '…' runs and \' escapes; ok is false for anything
// else (an unquoted byte would end the token or be interpreted).
func unquote(q string) (string, bool) {
	var b strings.Builder
	for len(q) > 0 {
		switch {
		case strings.HasPrefix(q, `\'`):
			b.WriteByte('\'')
			q = q[2:]
		case q[0] == '\'':
			end := strings.IndexByte(q[1:], '\'')
			if end < 0 {
				return "", false
			}
			b.WriteString(q[1 : 1+end])
			q = q[2+end:]
		default:
			return "", false
		}
	}
	return b.String(), true
}

// FuzzSendKeys checks that the send-keys lines for any text carry it byte-exact: the
// -l runs read back through unquote and the -H runs through hex give the text again.
func FuzzSendKeys(f *testing.F) {
	for _, s := range controlmodeCorpus {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var got strings.Builder
		for _, line := range controlmode.SendKeys("%1", text) {
			rest, ok := strings.CutPrefix(line, "send-keys -t '%1' ")
			if !ok || strings.ContainsAny(line, "\n\r\x00") {
				t.Fatalf("line %q", line)
			}
			if lit, ok := strings.CutPrefix(rest, "-l -- "); ok {
				s, ok := unquote(lit)
				if !ok || s == "" {
					t.Fatalf("literal %q does not unquote", lit)
				}
				got.WriteString(s)
				continue
			}
			hexes, ok := strings.CutPrefix(rest, "-H ")
			if !ok {
				t.Fatalf("line %q is neither -l nor -H", line)
			}
			raw, err := hex.DecodeString(strings.ReplaceAll(hexes, " ", ""))
			if err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			got.Write(raw)
		}
		if got.String() != text {
			t.Fatalf("SendKeys(%q) types %q", text, got.String())
		}
	})
}
