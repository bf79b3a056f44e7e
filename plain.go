package nudge

import "strings"

// Plain is a streaming ANSI/VT escape stripper for pane output (%output chunks).
// It carries the escape-sequence state across Write calls, so stripping a
// concatenation gives the same text as stripping its pieces one after the other.
//
// What it keeps: printable bytes (0x20–0x7E and every byte >= 0x80, so UTF-8 text
// passes unchanged), and the C0 white space TAB, LF and CR, kept as separators
// (a CR that rewrites a line must not glue the old and new words together).
// What it drops: other C0 controls and DEL; 2-byte ESC sequences and charset
// designations (ESC ( B); CSI sequences; OSC, DCS, SOS, PM and APC strings, ended
// by BEL or ST (ESC \), or aborted by CAN, SUB or an ESC that starts a new sequence.
// A CSI cursor-motion sequence (final byte A–H, d, f or `) becomes one space, so
// text placed by cursor moves stays apart. 8-bit C1 bytes are not interpreted.
//
// The zero Plain is ready to use, in the ground state. A Plain is not safe for
// concurrent use.
type Plain struct {
	st plainState
}

type plainState uint8

const (
	stGround    plainState = iota
	stEsc                  // after ESC
	stEscInter             // ESC followed by intermediates 0x20–0x2F (e.g. ESC ( B)
	stCSI                  // ESC [ params/intermediates
	stString               // OSC, DCS, SOS, PM, APC body
	stStringEsc            // ESC inside a string: ST if followed by '\'
)

// Write appends the printable text of src to dst and returns the extended slice.
// It does not retain src or dst; it allocates only when dst lacks capacity.
func (p *Plain) Write(dst, src []byte) []byte {
	for i := 0; i < len(src); {
		if p.st == stGround {
			j := i
			for j < len(src) && (src[j] >= 0x20 && src[j] != 0x7f) {
				j++
			}
			dst = append(dst, src[i:j]...)
			if i = j; i == len(src) {
				break
			}
		}
		if c, ok := p.Step(src[i]); ok {
			dst = append(dst, c)
		}
		i++
	}
	return dst
}

// Reset returns p to the ground state, e.g. after the stream was resynchronised.
func (p *Plain) Reset() { p.st = stGround }

// Step feeds one byte and reports the byte of text it yields, if any. Write is
// Step over each byte, faster; Step lets a scanner (like ack.Matcher) strip inline.
func (p *Plain) Step(c byte) (byte, bool) {
	if c == 0x18 || c == 0x1a { // CAN, SUB abort any sequence
		p.st = stGround
		return 0, false
	}
	switch p.st {
	case stGround:
		return p.ground(c)
	case stEsc:
		p.esc(c)
	case stEscInter:
		p.escInter(c)
	case stCSI:
		return p.csi(c)
	case stString:
		p.str(c)
	case stStringEsc:
		if c == '\\' {
			p.st = stGround
		} else {
			p.st = stEsc
			p.esc(c)
		}
	}
	return 0, false
}

func (p *Plain) ground(c byte) (byte, bool) {
	switch {
	case c == 0x1b:
		p.st = stEsc
	case c >= 0x20 && c != 0x7f, c == '\t', c == '\n', c == '\r':
		return c, true
	}
	return 0, false
}

func (p *Plain) esc(c byte) {
	switch {
	case c == '[':
		p.st = stCSI
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
		p.st = stString
	case c >= 0x20 && c <= 0x2f:
		p.st = stEscInter
	case c == 0x1b || c < 0x20:
		// ESC restarts; other C0 controls are executed (here: dropped) in place.
	default:
		p.st = stGround // final byte 0x30–0x7E, or DEL/8-bit: give up the sequence
	}
}

func (p *Plain) escInter(c byte) {
	switch {
	case c == 0x1b:
		p.st = stEsc
	case c >= 0x20 && c <= 0x2f, c < 0x20:
	default:
		p.st = stGround
	}
}

func (p *Plain) csi(c byte) (byte, bool) {
	switch {
	case c == 0x1b:
		p.st = stEsc
	case c >= 0x20 && c <= 0x3f, c < 0x20:
		// parameters and intermediates; C0 inside CSI dropped
	default:
		p.st = stGround
		if c >= 'A' && c <= 'H' || c == 'd' || c == 'f' || c == '`' {
			return ' ', true
		}
	}
	return 0, false
}

func (p *Plain) str(c byte) {
	switch c {
	case 0x07:
		p.st = stGround
	case 0x1b:
		p.st = stStringEsc
	}
}

// StripANSI returns the plain text of s: Plain's stripping (escape sequences removed, a
// cursor move becomes one space) and then every control character left (C0 but tab and
// newline, DEL, C1) removed, so captured text is safe to print in another terminal, to
// match a line against, or to send to a classifier. Text without control characters is
// returned as is, without allocating. StripANSI and Plain are the project's one ANSI
// stripper (the detector's screen parser, which keeps styles, parses rather than strips).
func StripANSI(s string) string {
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	var p Plain
	b := p.Write(make([]byte, 0, len(s)), []byte(s))
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return -1
		}
		return r
	}, string(b))
}

func isControl(r rune) bool {
	return r != '\n' && r != '\t' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0))
}
