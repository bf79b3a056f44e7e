package detector

import (
	"strconv"
	"strings"

	"github.com/nudgehq/nudge"
)

// buttons reads a dialog whose options are a row of buttons (Keys "arrows"): the first
// line below the question that holds every button label in order, and the dialog's text
// between the question and it. raw are the lines as captured (escapes kept), plain the
// same without them. Each option's key is the way to it from the selected button —
// Right as many times as it lies to the right, round the row, then Enter — so an option
// has keys only while exactly one button is drawn unlike the others; with none told
// apart the row is still read, its options without keys (nothing can be answered).
// between are the indices of the lines above the row, last the row's.
func (d *DialogSpec) buttons(raw, plain []string) (opts []nudge.DialogOption, between []int, last int) {
	for i, l := range plain {
		if buttonsAt(l, d.Buttons) == nil {
			between = append(between, i)
			continue
		}
		text, styles := cellStyles(raw[i])
		sel := -1
		if at := buttonsAt(text, d.Buttons); at != nil {
			sel = selectedButton(styles, at)
		}
		n := len(d.Buttons)
		for j, label := range d.Buttons {
			o := nudge.DialogOption{Label: label}
			if sel >= 0 {
				o.Key = strings.Repeat("Right ", (j-sel+n)%n) + "Enter"
			}
			opts = append(opts, o)
		}
		return opts, between, i
	}
	return nil, nil, -1
}

// buttonsAt returns the byte offsets in l of each label, in order, or nil when l does not
// hold them all.
func buttonsAt(l string, labels []string) []int {
	at := make([]int, 0, len(labels))
	from := 0
	for _, b := range labels {
		i := strings.Index(l[from:], b)
		if i < 0 {
			return nil
		}
		at = append(at, from+i)
		from += i + len(b)
	}
	return at
}

// selectedButton returns the index of the one button whose first character is drawn
// with a background or reverse unlike every other button's, or -1 when not exactly one
// is (two buttons in two styles do not say which is selected).
func selectedButton(styles []string, at []int) int {
	style := func(i int) string {
		if i < len(styles) {
			return styles[i]
		}
		return ""
	}
	sel := -1
	for j := range at {
		alone := true
		for k := range at {
			if k != j && style(at[k]) == style(at[j]) {
				alone = false
			}
		}
		if alone {
			if sel >= 0 {
				return -1
			}
			sel = j
		}
	}
	return sel
}

// cellStyles returns raw's text without escapes and, for each of its bytes, the
// background and reverse video in effect there ("bg;rev"), following SGR sequences;
// other CSI sequences and OSC strings are skipped.
func cellStyles(raw string) (string, []string) {
	var text strings.Builder
	var out []string
	bg, rev := "", false
	for i := 0; i < len(raw); {
		if raw[i] != 0x1b {
			text.WriteByte(raw[i])
			out = append(out, bg+";"+strconv.FormatBool(rev))
			i++
			continue
		}
		i++
		switch {
		case i < len(raw) && raw[i] == '[':
			k := i + 1
			for k < len(raw) && (raw[k] < 0x40 || raw[k] > 0x7e) {
				k++
			}
			if k < len(raw) && raw[k] == 'm' {
				bg, rev = sgrBackground(raw[i+1:k], bg, rev)
			}
			i = k + 1
		case i < len(raw) && raw[i] == ']':
			for i < len(raw) && raw[i] != 0x07 && !(raw[i] == 0x1b && i+1 < len(raw) && raw[i+1] == '\\') {
				i++
			}
			if i < len(raw) && raw[i] == 0x1b {
				i++
			}
			i++
		default:
			i++
		}
	}
	return text.String(), out
}

// sgrBackground applies one SGR parameter list to the background and reverse state.
func sgrBackground(params, bg string, rev bool) (string, bool) {
	ps := strings.FieldsFunc(params, func(r rune) bool { return r == ';' || r == ':' })
	if len(ps) == 0 {
		return "", false
	}
	for i := 0; i < len(ps); i++ {
		switch p := ps[i]; {
		case p == "0":
			bg, rev = "", false
		case p == "7":
			rev = true
		case p == "27":
			rev = false
		case p == "49":
			bg = ""
		case (p == "38" || p == "48") && i+2 < len(ps) && ps[i+1] == "5":
			if p == "48" {
				bg = "5:" + ps[i+2]
			}
			i += 2
		case (p == "38" || p == "48") && i+4 < len(ps) && ps[i+1] == "2":
			if p == "48" {
				bg = "2:" + ps[i+2] + "," + ps[i+3] + "," + ps[i+4]
			}
			i += 4
		case len(p) == 2 && p[0] == '4' && p[1] >= '0' && p[1] <= '7',
			len(p) == 3 && p[:2] == "10" && p[2] >= '0' && p[2] <= '7':
			bg = p
		}
	}
	return bg, rev
}
