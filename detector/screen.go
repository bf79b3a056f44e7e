package detector

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Screen is one capture of a pane: the output of `capture-pane -p -e` (or
// plain -p) and the cursor row, 0-based from the first line of Text.
// CursorY < 0 means unknown.
type Screen struct {
	Text    string
	CursorY int
}

// style is the SGR state of one cell, as far as the detector cares.
type style struct {
	dim bool
	fg  string // canonical SGR foreground params ("90", "38;5;8"); "" = default
}

// line is one screen row: its cells' runes and styles, ANSI removed.
type line struct {
	runes []rune
	// styles holds each cell's style as an index in palette (a styled row only: nil
	// for a row with no styled cell). The rows of a screen share both.
	styles  []uint32
	palette []style
	plain   string // string(runes) without trailing spaces
	styled  bool   // some cell has a non-default style
}

// parseScreen splits a capture into rows, removing escape sequences and
// tracking SGR dim/foreground across rows (tmux -e emits a reset at the start
// of the next row, so attributes carry over line breaks).
//
// Every row's runes share one backing array and every row's plain text is a slice of one
// string: a readiness look allocates a handful of times, not three times per row (it was
// most of what a busy fleet's daemon allocated). Styles are kept from the first styled
// cell on, 4 bytes a cell in one array shared by the rows (an index in a palette of the
// screen's few distinct styles), not a style value per cell of each styled row: those
// were most of what a fleet of real agents' readiness looks allocated.
func parseScreen(s string) []line {
	b := newScreenBuilder(s)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			b.endRow()
			i++
		case c == '\r':
			i++
		case c == 0x1b:
			i = skipEscape(s, i, &b.st)
			b.sti = -1
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			i += n
			if r == '\t' {
				r = ' '
			} else if unicode.IsControl(r) {
				continue
			}
			b.cell(r)
		}
	}
	return b.finish()
}

// screenBuilder holds parseScreen's rows while it reads a capture.
type screenBuilder struct {
	out   []line
	runes []rune   // every row's runes, one after the other
	text  []byte   // the rows' plain text, one after the other
	spans [][2]int // each row's plain text in text
	cells []uint32 // each rune's style in pal, once a cell was styled
	pal   []style  // the distinct styles seen; pal[0] is the default
	cur   line
	start int // where cur's runes begin in runes
	st    style
	sti   int // st's index in pal; -1: look it up
}

func newScreenBuilder(s string) screenBuilder {
	rows := strings.Count(s, "\n") + 1
	runes := make([]rune, 0, visibleBytes(s)) // a row has at most as many runes as visible bytes
	return screenBuilder{
		out:   make([]line, 0, rows),
		runes: runes,
		text:  make([]byte, 0, cap(runes)),
		spans: make([][2]int, 0, rows),
		sti:   -1,
	}
}

// cell adds r, in the current style, to the current row.
func (b *screenBuilder) cell(r rune) {
	if b.st != (style{}) {
		b.cur.styled = true
		if b.cells == nil { // the first styled cell: every cell before it has the default
			b.cells = make([]uint32, len(b.runes), cap(b.runes))
			b.pal = append(make([]style, 0, 8), style{})
		}
	}
	b.runes = append(b.runes, r)
	if b.cells != nil {
		if b.sti < 0 {
			b.sti = paletteIndex(&b.pal, b.st)
		}
		b.cells = append(b.cells, uint32(b.sti))
	}
}

// endRow closes the current row.
func (b *screenBuilder) endRow() {
	n := len(b.runes)
	b.cur.runes = b.runes[b.start:n:n]
	if b.cur.styled {
		b.cur.styles, b.cur.palette = b.cells[b.start:n:n], b.pal
	}
	from := len(b.text)
	for _, r := range b.cur.runes {
		b.text = utf8.AppendRune(b.text, r)
	}
	to := len(b.text)
	for to > from && b.text[to-1] == ' ' {
		to--
	}
	b.spans = append(b.spans, [2]int{from, to})
	b.out = append(b.out, b.cur)
	b.cur, b.start = line{}, n
}

// finish closes the last row and gives every row its plain text, slices of one string.
func (b *screenBuilder) finish() []line {
	if len(b.runes) > b.start {
		b.endRow()
	}
	all := string(b.text)
	for k := range b.out {
		b.out[k].plain = all[b.spans[k][0]:b.spans[k][1]]
	}
	return b.out
}

// visibleBytes is how many bytes of s are outside escape sequences and line ends: enough
// runes for every row.
func visibleBytes(s string) int {
	n := 0
	for i := 0; i < len(s); {
		switch s[i] {
		case 0x1b:
			i = skipEscape(s, i, nil)
		case '\n', '\r':
			i++
		default:
			n++
			i++
		}
	}
	return n
}

// skipEscape consumes the escape sequence at s[i] (ESC) and returns the index
// after it, applying SGR sequences to st (unless st is nil).
func skipEscape(s string, i int, st *style) int {
	if i+1 >= len(s) {
		return len(s)
	}
	switch s[i+1] {
	case '[': // CSI: parameters, intermediates, one final byte 0x40–0x7e
		j := i + 2
		for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
			j++
		}
		if j < len(s) && s[j] == 'm' && st != nil {
			applySGR(s[i+2:j], st)
		}
		return min(j+1, len(s))
	case ']', 'P', '_', '^': // OSC/DCS/APC/PM: until BEL or ST
		for j := i + 2; j < len(s); j++ {
			if s[j] == 0x07 {
				return j + 1
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2
			}
		}
		return len(s)
	case '(', ')', '*', '+':
		return min(i+3, len(s))
	}
	return i + 2
}

func applySGR(params string, st *style) {
	if params == "" {
		*st = style{}
		return
	}
	// The parameters' offsets in params, on the stack: no allocation per sequence (a
	// styled screen has hundreds). A colour written with ':' is normalised to ';', which
	// needs a new string; with ';' it is a slice of params.
	var offs [32][2]int
	ps := offs[:0]
	from := 0
	for i := 0; i <= len(params); i++ {
		if i == len(params) || params[i] == ';' || params[i] == ':' {
			if len(ps) == cap(ps) {
				applySGRSplit(params, st)
				return
			}
			ps = append(ps, [2]int{from, i})
			from = i + 1
		}
	}
	colon := strings.IndexByte(params, ':') >= 0
	p := func(k int) string { return params[ps[k][0]:ps[k][1]] }
	span := func(k, n int) string {
		if colon {
			return strings.ReplaceAll(params[ps[k][0]:ps[k+n][1]], ":", ";")
		}
		return params[ps[k][0]:ps[k+n][1]]
	}
	for k := 0; k < len(ps); k++ {
		switch q := p(k); {
		case q == "0" || q == "":
			*st = style{}
		case q == "2":
			st.dim = true
		case q == "22":
			st.dim = false
		case q == "39":
			st.fg = ""
		case len(q) == 2 && (q[0] == '3' || q[0] == '9') && q[1] >= '0' && q[1] <= '7':
			st.fg = q
		case q == "38" && k+2 < len(ps) && p(k+1) == "5":
			st.fg = span(k, 2)
			k += 2
		case q == "38" && k+4 < len(ps) && p(k+1) == "2":
			st.fg = span(k, 4)
			k += 4
		case (q == "48" || q == "58") && k+1 < len(ps):
			if p(k+1) == "5" {
				k += 2
			} else if p(k+1) == "2" {
				k += 4
			}
		}
	}
}

// applySGRSplit is applySGR for a sequence of more than 32 parameters.
func applySGRSplit(params string, st *style) {
	ps := strings.Split(strings.ReplaceAll(params, ":", ";"), ";")
	for k := 0; k < len(ps); k++ {
		switch p := ps[k]; {
		case p == "0" || p == "":
			*st = style{}
		case p == "2":
			st.dim = true
		case p == "22":
			st.dim = false
		case p == "39":
			st.fg = ""
		case len(p) == 2 && (p[0] == '3' || p[0] == '9') && p[1] >= '0' && p[1] <= '7':
			st.fg = p
		case p == "38" && k+2 < len(ps) && ps[k+1] == "5":
			st.fg = "38;5;" + ps[k+2]
			k += 2
		case p == "38" && k+4 < len(ps) && ps[k+1] == "2":
			st.fg = "38;2;" + strings.Join(ps[k+2:k+5], ";")
			k += 4
		case (p == "48" || p == "58") && k+1 < len(ps):
			if ps[k+1] == "5" {
				k += 2
			} else if ps[k+1] == "2" {
				k += 4
			}
		}
	}
}

// isPlaceholderStyle reports whether st is one of the pack's placeholder styles.
// style is the style of cell k (the default for a row with no styled cell).
func (l line) style(k int) style {
	if k < len(l.styles) {
		return l.palette[l.styles[k]]
	}
	return style{}
}

// paletteIndex is st's index in *pal, appended if new.
func paletteIndex(pal *[]style, st style) int {
	for k, p := range *pal {
		if p == st {
			return k
		}
	}
	*pal = append(*pal, st)
	return len(*pal) - 1
}

func isPlaceholderStyle(st style, styles []string) bool {
	for _, s := range styles {
		if (s == "dim" && st.dim) || (st.fg != "" && s == "fg:"+st.fg) {
			return true
		}
	}
	return false
}

// lastNonBlank returns the index of the last row with visible text, or -1.
func lastNonBlank(ls []line) int {
	for i := len(ls) - 1; i >= 0; i-- {
		if strings.TrimSpace(ls[i].plain) != "" {
			return i
		}
	}
	return -1
}
