package detector

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"

	"github.com/nudgehq/nudge"
)

// DialogSpec says how a pack's approval dialog reads, so that it can be shown and answered
// as data (nudge.Dialog): the question that opens its options, the option lines, and
// which key answers each.
type DialogSpec struct {
	// Question matches the dialog's question line ("Do you want to proceed?"); the
	// bottom-most match on the screen is the dialog's. Its options follow it.
	Question []string `json:"question"`
	// Option matches one option line; the groups "num" and "label" are required, "key"
	// (a shortcut the line shows, e.g. "(y)") optional.
	Option string `json:"option"`
	// Keys says which key answers an option: "number" (the digit before it),
	// "shortcut" (the key in its parentheses, else its number), or "arrows": the options
	// are Buttons on one row, one of them selected (drawn in a colour or reverse of its
	// own), Left and Right move the selection round, Enter takes it.
	Keys string `json:"keys"`
	// Buttons are the labels of a row of buttons, in order (Keys "arrows"; Option is
	// then not used).
	Buttons []string `json:"buttons,omitempty"`
	// Above is how many lines above the question belong to the dialog (Claude Code's
	// tool name and command); they stop at a horizontal rule. The lines between the
	// question and the first option (Codex's command and reason) always do.
	Above int `json:"above,omitempty"`
	// Yes and No match the labels of the options `nudge approve` and `nudge deny` pick
	// (the first match from the top).
	Yes string `json:"yes"`
	No  string `json:"no"`

	question []*regexp.Regexp
	option   *regexp.Regexp
	yes, no  *regexp.Regexp
}

func (d *DialogSpec) compile() error {
	d.question = d.question[:0]
	for _, q := range d.Question {
		re, err := regexp.Compile(q)
		if err != nil {
			return err
		}
		d.question = append(d.question, re)
	}
	var err error
	if d.Keys == "arrows" {
		if len(d.Buttons) < 2 {
			return errString("dialog keys arrows: needs two buttons or more")
		}
	} else if d.option, err = regexp.Compile(d.Option); err != nil {
		return err
	} else if d.option.SubexpIndex("num") < 0 || d.option.SubexpIndex("label") < 0 {
		return errString("dialog option: needs the groups num and label")
	}
	if d.yes, err = regexp.Compile(d.Yes); err != nil {
		return err
	}
	if d.no, err = regexp.Compile(d.No); err != nil {
		return err
	}
	if d.Keys != "number" && d.Keys != "shortcut" && d.Keys != "arrows" {
		return errString(`dialog keys: want "number", "shortcut" or "arrows"`)
	}
	return nil
}

type errString string

func (e errString) Error() string { return string(e) }

// rule matches a line drawn as a horizontal rule (a TUI's separator); boxOnly a line of
// box drawing alone (a frame inside the dialog), which is not part of its text; shortcut
// the key an option shows in parentheses at the end of its label: "(p)".
var (
	rule     = regexp.MustCompile(`^\s*[─━═-]{8,}\s*$`)
	boxOnly  = regexp.MustCompile(`^[─━═│┃╭╮╰╯┌┐└┘├┤ ]+$`)
	shortcut = regexp.MustCompile(`\s*\(([^()\s]+)\)\s*$`)
)

// ParseDialog reads the approval dialog on screen (as captured, escapes and all: a row of
// buttons shows its selection only by colour) as pack p describes it; nil when p
// describes none or none is shown. The dialog's id is a hash of what it shows (question,
// context, options, and which button is selected): it changes whenever the dialog does.
func ParseDialog(p *Pack, screen string) *nudge.Dialog {
	if p == nil || p.Dialog == nil || (p.Dialog.option == nil && p.Dialog.Keys != "arrows") {
		return nil
	}
	d := p.Dialog
	raw := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	lines := make([]string, len(raw))
	for i, l := range raw {
		lines[i] = nudge.StripANSI(l)
	}
	q := d.questionLine(lines)
	if q < 0 {
		return nil
	}
	var opts []nudge.DialogOption
	var between []string
	if d.Keys == "arrows" {
		opts, between = d.buttons(raw[q+1:], lines[q+1:])
	} else {
		opts, between = d.options(lines[q+1:])
	}
	if len(opts) == 0 {
		return nil
	}
	text := strings.TrimSpace(strings.Join(append(d.above(lines, q), between...), "\n"))
	title := dialogText(lines[q])
	dl := &nudge.Dialog{DialogID: dialogHash(title, text, opts), Title: title, Text: text, Options: opts}
	dl.ApproveKey, dl.DenyKey = DialogChoice(p, dl, true), DialogChoice(p, dl, false)
	return dl
}

// questionLine returns the index of the bottom-most line matching a question, or -1.
func (d *DialogSpec) questionLine(lines []string) int {
	for i := len(lines) - 1; i >= 0; i-- {
		for _, re := range d.question {
			if re.MatchString(lines[i]) {
				return i
			}
		}
	}
	return -1
}

// options reads the option lines that follow the question (a label wrapped onto the
// next lines joined to its option) and returns them with the dialog's text between the
// question and the first option (the command, its reason).
func (d *DialogSpec) options(lines []string) (opts []nudge.DialogOption, between []string) {
	for _, l := range lines {
		m := d.option.FindStringSubmatch(l)
		switch {
		case m != nil:
			opts = append(opts, d.parseOption(m))
		case len(opts) == 0:
			if t := dialogText(l); t != "" && !boxOnly.MatchString(t) {
				between = append(between, t)
			}
		case !d.wrapped(&opts[len(opts)-1], len(opts), l):
			return opts, between // the options are over (a blank line, the footer)
		}
	}
	return opts, between
}

// parseOption is the option of a matched option line m: its number or shortcut and label.
func (d *DialogSpec) parseOption(m []string) nudge.DialogOption {
	num, label, key := d.option.SubexpIndex("num"), d.option.SubexpIndex("label"), d.option.SubexpIndex("key")
	o := nudge.DialogOption{Key: m[num], Label: strings.TrimSpace(m[label])}
	if d.Keys == "shortcut" {
		if key >= 0 && m[key] != "" {
			o.Key = shortcutKey(m[key])
		} else if k := shortcut.FindStringSubmatch(o.Label); k != nil {
			o.Key, o.Label = shortcutKey(k[1]), strings.TrimSpace(o.Label[:len(o.Label)-len(k[0])])
		}
	}
	return o
}

// wrapped joins line l to last, the n-th option, when l continues its label (an indented
// line), and reports whether it did.
func (d *DialogSpec) wrapped(last *nudge.DialogOption, n int, l string) bool {
	t := strings.TrimSpace(l)
	if t == "" || !strings.HasPrefix(l, "  ") {
		return false
	}
	if k := shortcut.FindStringSubmatch(t); k != nil && d.Keys == "shortcut" && last.Key == strconv.Itoa(n) {
		// A wrapped label's shortcut on its own line: "(p)".
		last.Key = shortcutKey(k[1])
		t = strings.TrimSpace(t[:len(t)-len(k[0])])
	}
	if t != "" {
		last.Label += " " + t
	}
	return true
}

// above returns the lines of the dialog above its question line q (up to d.Above of
// them, stopping at a horizontal rule), frames trimmed.
func (d *DialogSpec) above(lines []string, q int) []string {
	var above []string
	for i := q - 1; i >= 0 && i >= q-d.Above; i-- {
		if rule.MatchString(lines[i]) {
			break
		}
		if t := dialogText(lines[i]); t != "" && !boxOnly.MatchString(t) {
			above = append([]string{t}, above...)
		}
	}
	return above
}

// dialogText is a dialog line without its frame and surrounding blanks.
func dialogText(l string) string { return strings.TrimSpace(strings.Trim(l, "│┃ ")) }

// dialogHash is a dialog's id: a hash of its title, text and options.
func dialogHash(title, text string, opts []nudge.DialogOption) string {
	h := sha256.New()
	h.Write([]byte(title + "\x00" + text))
	for _, o := range opts {
		h.Write([]byte("\x00" + o.Key + "\x01" + o.Label))
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// shortcutKey is the tmux key name of a shortcut a dialog shows ("esc" → Escape).
func shortcutKey(k string) string {
	switch strings.ToLower(k) {
	case "esc":
		return "Escape"
	case "enter":
		return "Enter"
	}
	return k
}

// DialogChoice returns the key of the option `approve` (yes) or `deny` (!yes) picks in d,
// as pack p names them; "" when none matches.
func DialogChoice(p *Pack, d *nudge.Dialog, yes bool) string {
	if p == nil || p.Dialog == nil || d == nil {
		return ""
	}
	re := p.Dialog.no
	if yes {
		re = p.Dialog.yes
	}
	for _, o := range d.Options {
		if re.MatchString(o.Label) {
			return o.Key
		}
	}
	return ""
}

// DialogNow captures rt's pane now and reads the approval dialog on it (nil when none is
// shown, or its pack reads none).
func (m *Monitor) DialogNow(ctx context.Context, rt nudge.Runtime) (*nudge.Dialog, error) {
	sc, err := m.capture(ctx, rt)
	if err != nil {
		return nil, err
	}
	return ParseDialog(m.packFor(rt), sc.text), nil
}
