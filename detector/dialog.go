package detector

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

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
	// Footer matches the lines a dialog may show below its options (Claude Code's "Esc
	// to cancel · …", Codex's "Press enter to confirm or esc to cancel"). A dialog is
	// live only when nothing but these, blank lines and frames lies below its options to
	// the bottom of the screen: words that look like a dialog in the agent's prose, above
	// a dialog the pack does not know, are not one.
	Footer []string `json:"footer,omitempty"`
	// Command matches the dialog line its command begins on (Dialog.Command, the one
	// field workspace auto_answer rules match), among the lines above the question and
	// between it and the options; its group "cmd", when present, is the command's first
	// line, else the command starts on the next line. The command runs on to the end of
	// those lines. More than one such line makes the command unknown ("").
	Command string `json:"command,omitempty"`
	// Note are the styles ("dim", "fg:38;5;246") of the lines at the end of the command
	// that are the agent's description of it, not the command (Claude Code's grey line).
	// A line in such a style with a command line below it makes the command unknown.
	Note []string `json:"note,omitempty"`

	question []*regexp.Regexp
	option   *regexp.Regexp
	yes, no  *regexp.Regexp
	footer   []*regexp.Regexp
	command  *regexp.Regexp
}

func (d *DialogSpec) compile() error {
	d.question, d.footer = d.question[:0], d.footer[:0]
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
	for _, f := range d.Footer {
		re, err := regexp.Compile(f)
		if err != nil {
			return err
		}
		d.footer = append(d.footer, re)
	}
	d.command = nil
	if d.Command != "" {
		if d.command, err = regexp.Compile(d.Command); err != nil {
			return err
		}
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
	boxOnly  = regexp.MustCompile(`^[─━═│┃╭╮╰╯┌┐└┘├┤╌╍┄┅┈┉ ]+$`)
	shortcut = regexp.MustCompile(`\s*\(([^()\s]+)\)\s*$`)
)

// ParseDialog reads the approval dialog on screen (as captured, escapes and all: a row of
// buttons shows its selection only by colour) as pack p describes it; nil when p
// describes none or none is shown. The dialog is the bottom-most question line with its
// options, and only when it is live: its options numbered 1, 2, … in order and nothing
// but the pack's footer, blank lines and frames below them (ParseDialog does not
// classify the screen: DialogNow and the monitor also require NEEDS_CONFIRMATION of the
// same capture). The dialog's id is a hash of what it shows (question, context, options,
// and which button is selected): it changes whenever the dialog does.
func ParseDialog(p *Pack, screen string) *nudge.Dialog {
	if p == nil || p.Dialog == nil || (p.Dialog.option == nil && p.Dialog.Keys != "arrows") {
		return nil
	}
	d := p.Dialog
	screen = strings.TrimRight(screen, "\n")
	raw := strings.Split(screen, "\n")
	lines := make([]string, len(raw))
	for i, l := range raw {
		lines[i] = nudge.StripANSI(l)
	}
	q := d.questionLine(lines)
	if q < 0 {
		return nil
	}
	var opts []nudge.DialogOption
	var between []int
	last := -1
	if d.Keys == "arrows" {
		opts, between, last = d.buttons(raw[q+1:], lines[q+1:])
	} else {
		opts, between, last = d.options(lines[q+1:])
	}
	if len(opts) == 0 || last < 0 || !d.bottom(lines[q+1+last+1:]) {
		return nil
	}
	for i := range between {
		between[i] += q + 1
	}
	above := d.above(lines, q)
	text := strings.TrimSpace(strings.Join(dialogLines(lines, append(above, between...)), "\n"))
	title := dialogText(lines[q])
	dl := &nudge.Dialog{DialogID: dialogHash(title, text, opts), Title: title, Text: text, Options: opts}
	if d.command != nil {
		dl.Command = d.commandIn(screen, lines, above, between)
	}
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
// next lines joined to its option) and returns them with the indices in lines of the
// dialog's text between the question and the first option (the command, its reason)
// and of the options' last line. Options not numbered 1, 2, … in order are no dialog's
// (last -1): two dialogs run together (prose quoting one right above the real one) are
// not one.
func (d *DialogSpec) options(lines []string) (opts []nudge.DialogOption, between []int, last int) {
	num, label := d.option.SubexpIndex("num"), d.option.SubexpIndex("label")
	col := 0 // where the last option's label starts: a line continuing it is indented so
	for i, l := range lines {
		m := d.option.FindStringSubmatch(l)
		switch {
		case m != nil && m[num] != strconv.Itoa(len(opts)+1):
			return opts, between, -1
		case m != nil:
			opts = append(opts, d.parseOption(m))
			last = i
			col = utf8.RuneCountInString(l[:d.option.FindStringSubmatchIndex(l)[2*label]])
		case len(opts) == 0:
			between = append(between, i)
		case len(l)-len(strings.TrimLeft(l, " ")) < col || !d.wrapped(&opts[len(opts)-1], len(opts), l):
			return opts, between, last // the options are over (a blank line, the footer)
		default:
			last = i
		}
	}
	return opts, between, last
}

// bottom reports whether lines, the rest of the screen below a dialog's options, hold
// nothing but blank lines, frames and the pack's footer: the dialog is the live one at
// the bottom of the screen, not words in the agent's prose above something else.
func (d *DialogSpec) bottom(lines []string) bool {
	for _, l := range lines {
		t := dialogText(l)
		if t == "" || boxOnly.MatchString(t) {
			continue
		}
		if !matchAny(d.footer, t) {
			return false
		}
		if (d.option != nil && d.option.MatchString(l)) || matchAny(d.question, l) {
			return false
		}
	}
	return true
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

// above returns the indices of the dialog's lines above its question line q (up to
// d.Above of them, stopping at a horizontal rule), top to bottom.
func (d *DialogSpec) above(lines []string, q int) []int {
	var above []int
	for i := q - 1; i >= 0 && i >= q-d.Above; i-- {
		if rule.MatchString(lines[i]) {
			break
		}
		above = append([]int{i}, above...)
	}
	return above
}

// dialogLines are the text of lines at the indices at, frames trimmed, without blank
// lines and lines of frame alone.
func dialogLines(lines []string, at []int) []string {
	var out []string
	for _, i := range at {
		if t := dialogText(lines[i]); t != "" && !boxOnly.MatchString(t) {
			out = append(out, t)
		}
	}
	return out
}

// commandIn reads the dialog's command (DialogSpec.Command) from its lines above the
// question and between it and the options (indices in lines; screen is the capture,
// for the lines' styles): "" when no line or more than one begins a command, when a
// line of the agent's description (Note) has a command line below it, or when the pack
// has Note styles and the screen has no styles at all.
func (d *DialogSpec) commandIn(screen string, lines []string, above, between []int) string {
	start, end, first := d.commandStart(lines, above, between)
	if start < 0 {
		return ""
	}
	styled := parseScreen(screen)
	if len(d.Note) > 0 && !slices.ContainsFunc(styled, func(l line) bool { return l.styled }) {
		// A screen drawn without styles (the agent's colours off: NO_COLOR, CI set in its
		// environment) does not tell the description from the command: no command is read.
		return ""
	}
	var cmd []string
	if first != "" {
		cmd = append(cmd, first)
	}
	note := false
	for i := start; i <= end && i < len(lines); i++ {
		t := dialogText(lines[i])
		switch {
		case t == "" || boxOnly.MatchString(t):
			cmd = append(cmd, "")
		case i < len(styled) && d.isNote(styled[i]):
			// Claude Code draws its description below the command, or (2.1.3xx) above it,
			// fenced off by dashed rules: a description before any command line is skipped.
			if strings.Trim(strings.Join(cmd, ""), "\n") != "" {
				note = true
			}
		case note:
			return "" // the command goes on below the description: not what the CLI draws
		default:
			cmd = append(cmd, t)
		}
	}
	return strings.Trim(strings.Join(cmd, "\n"), "\n")
}

// commandStart finds the one line that begins the command among the dialog's lines above
// and between: the command's lines run from start to end (indices in lines; start -1:
// no command, or two), first is its text on the line that begins it (group "cmd").
func (d *DialogSpec) commandStart(lines []string, above, between []int) (start, end int, first string) {
	start = -1
	for _, part := range [][]int{above, between} {
		for _, i := range part {
			m := d.command.FindStringSubmatch(dialogText(lines[i]))
			if m == nil {
				continue
			}
			if start >= 0 {
				return -1, -1, "" // two commands: the agent's words hold one
			}
			start, end = i+1, part[len(part)-1]
			if g := d.command.SubexpIndex("cmd"); g >= 0 {
				first = m[g]
			}
		}
	}
	return start, end, first
}

// isNote reports whether every visible cell of l is drawn in a Note style.
func (d *DialogSpec) isNote(l line) bool {
	if len(d.Note) == 0 {
		return false
	}
	seen := false
	for k, r := range l.runes {
		if r == ' ' || strings.ContainsRune("│┃", r) {
			continue
		}
		if !isPlaceholderStyle(l.style(k), d.Note) {
			return false
		}
		seen = true
	}
	return seen
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

// DialogNow captures rt's pane now and reads the approval dialog on it: nil when none is
// shown, its pack reads none, or the same capture does not classify as
// NEEDS_CONFIRMATION (prose quoting a dialog above the composer is no dialog). drew
// reports whether the pane has drawn since the capture (true for a pane the monitor does
// not watch: then nothing says it has not); an answer is sent only while it is false.
func (m *Monitor) DialogNow(ctx context.Context, rt nudge.Runtime) (d *nudge.Dialog, drew func() bool, err error) {
	drew = func() bool { return true }
	ps := m.get(rt.RuntimeID)
	var seq uint64
	if ps != nil {
		seq = ps.outSeq.Load() // before the capture: output it holds may bump it, never the reverse
		drew = func() bool { return ps.outSeq.Load() != seq }
	}
	sc, err := m.capture(ctx, rt)
	if err != nil {
		return nil, drew, err
	}
	pack := m.packFor(rt)
	if pack == nil || ClassifyScreen(pack, Screen{Text: sc.text, CursorY: sc.cursorY}).State != nudge.NeedsConfirmation {
		return nil, drew, nil
	}
	return ParseDialog(pack, sc.text), drew, nil
}
