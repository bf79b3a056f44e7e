package detector

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nudgehq/nudge"
)

// Classification is the verdict on one screen.
type Classification struct {
	State nudge.Readiness `json:"state"`
	// Summary is a one-line reason, usually the deciding screen line.
	Summary string `json:"summary"`
	// ActionsNeeded tells a human what to do (confirmation, error); may be nil.
	ActionsNeeded []string `json:"actions_needed,omitempty"`
	// Draft is the text a human typed into the composer but did not submit;
	// "" when the composer is empty or shows only its placeholder.
	Draft string `json:"draft,omitempty"`
	// Dialog is the approval dialog on screen as data, when State is
	// NEEDS_CONFIRMATION and the pack reads it (Pack.Dialog); nil otherwise.
	Dialog *nudge.Dialog `json:"dialog,omitempty"`
	// Confident is false when no cue decided; the caller may ask the LLM.
	Confident bool `json:"confident"`
	// Composer is true when the screen shows the agent's input line (Draft is then
	// what it holds, "" for none); false for a dialog or a screen without one.
	Composer bool `json:"-"`
	// Queued is true when the screen shows input waiting in the agent's own queue
	// (Pack.Queued): a prompt submitted while the agent was busy.
	Queued bool `json:"-"`
}

const maxSummary = 200

// Classify classifies a capture with an unknown cursor row: the last
// non-blank line is taken as the cursor line. See ClassifyScreen.
func Classify(p *Pack, screen string) Classification {
	return ClassifyScreen(p, Screen{Text: screen, CursorY: -1})
}

// ClassifyScreen classifies the bottom-most prompt region of s with pack p
// (rules in the package doc). It never fails: an empty screen or a screen
// without any cue is UNKNOWN and not confident.
func ClassifyScreen(p *Pack, s Screen) Classification {
	ls := parseScreen(s.Text)
	bottom := lastNonBlank(ls)
	if bottom < 0 {
		// A blank screen says nothing, wherever the cursor is (whether a capture came
		// with the cursor's position must not decide between BUSY and UNKNOWN).
		return Classification{State: nudge.Unknown, Summary: "empty screen"}
	}
	// TUIs park the cursor anywhere; only a cursor-line composer (a shell)
	// makes the cursor row the bottom of the region.
	if p.Composer.CursorLineOnly && s.CursorY >= 0 && s.CursorY < len(ls) && s.CursorY > bottom {
		bottom = s.CursorY
	}
	r := regionOf(p, ls, bottom)
	return r.decide()
}

// region is the prompt region of one screen under one pack.
type region struct {
	p      *Pack
	lines  []line // the region, top to bottom; lines[len-1] is the cursor line
	ignore []bool
	styled bool // the capture carries attributes (capture-pane -e)
}

// regionOf returns the rows holding the bottom p.region() non-blank lines
// (and the blank rows between them) ending at row bottom.
func regionOf(p *Pack, ls []line, bottom int) *region {
	top, n := bottom, 0
	for ; top > 0; top-- {
		if strings.TrimSpace(ls[top].plain) != "" {
			if n++; n == p.region() {
				break
			}
		}
	}
	r := &region{p: p, lines: ls[top : bottom+1]}
	r.ignore = make([]bool, len(r.lines))
	for i, l := range r.lines {
		r.ignore[i] = matchAny(p.ignore, l.plain)
		r.styled = r.styled || l.styled
	}
	return r
}

func (r *region) decide() Classification {
	p := r.p
	comp := r.composer()
	at := r.anchor(comp) // where scoped cues are placed from
	ready := max(comp, r.lastCue(p.Ready, at))
	// A turn-finished marker below a busy, error or confirmation line means that line
	// belongs to a turn that is over.
	done := r.lastCue(p.TurnDone, at)
	if i := r.lastCue(p.Confirm, at); i > done && r.confirmLive(i, comp, ready) {
		text := summarize(r.lines[i].plain)
		return Classification{State: nudge.NeedsConfirmation, Summary: text,
			ActionsNeeded: []string{"answer the prompt: " + text}, Confident: true}
	}
	draft := ""
	if comp >= 0 {
		draft = r.draft(comp)
	}
	c := Classification{Draft: draft, Confident: true, Composer: comp >= 0 || at >= 0,
		Queued: r.lastCue(p.Queued, at) >= 0}
	busy, errIdx := r.lastCue(p.Busy, at), r.lastCue(p.Error, at)
	switch {
	case busy >= 0 && busy > done && (busy >= ready || p.ComposerAlwaysShown):
		c.State, c.Summary = nudge.Busy, summarize(r.lines[busy].plain)
	case errIdx >= 0 && errIdx > done && (errIdx > ready || (p.ComposerAlwaysShown && r.newestEntry(errIdx, ready))):
		c.State, c.Summary = nudge.ErrorState, summarize(r.lines[errIdx].plain)
		c.ActionsNeeded = []string{"inspect the error: " + c.Summary}
	case ready >= 0:
		c.State, c.Summary = nudge.Ready, "idle: "+summarize(r.lines[ready].plain)
	case p.NoPromptMeansBusy:
		c.State, c.Summary, c.Confident = nudge.Busy, "no prompt on the cursor line", false
	default:
		c.State, c.Summary, c.Confident = nudge.Unknown, "no cue matched", false
	}
	return c
}

// confirmLive says whether the confirmation line at i is a dialog waiting for an answer
// rather than words in the agent's prose. A dialog takes the composer's place: it is at
// or below the composer line, or the "composer" found is the dialog's own selected
// option ("› 1. Yes", "❯ 1. Yes"), or no composer is drawn at all. Words above an input
// line that is really the composer are prose. Without an always-drawn composer (a
// shell), a prompt below the line means it was answered.
func (r *region) confirmLive(i, comp, ready int) bool {
	if i < 0 {
		return false
	}
	if !r.p.ComposerAlwaysShown {
		return i >= ready
	}
	return comp < 0 || i >= comp || r.matchesCue(r.p.Confirm, comp, comp)
}

// last returns the index of the bottom-most region line matching any of res.
func (r *region) last(res []*regexp.Regexp) int {
	for i := len(r.lines) - 1; i >= 0; i-- {
		if !r.ignore[i] && matchAny(res, r.lines[i].plain) {
			return i
		}
	}
	return -1
}

// composer returns the index of the composer line, or -1.
func (r *region) composer() int {
	re := r.p.Composer.prompt
	if re == nil {
		return -1
	}
	if r.p.Composer.CursorLineOnly {
		i := len(r.lines) - 1
		if re.MatchString(r.lines[i].plain) {
			return i
		}
		return -1
	}
	if above := r.p.Composer.above; above != nil {
		k := r.last([]*regexp.Regexp{above})
		i := k - 1
		for ; i >= 0 && i >= k-2 && !re.MatchString(r.lines[i].plain); i-- {
		}
		if k < 0 || i < 0 || i < k-2 {
			return -1
		}
		for i > 0 && re.MatchString(r.lines[i-1].plain) && !above.MatchString(r.lines[i-1].plain) {
			i--
		}
		return i
	}
	return r.last([]*regexp.Regexp{re})
}

// anchor is the line scoped cues are placed from: the composer line, or for an empty
// composer drawn inside a box (composer.above: OpenCode) the line under the input, or -1.
func (r *region) anchor(comp int) int {
	if comp >= 0 || r.p.Composer.above == nil {
		return comp
	}
	return r.last([]*regexp.Regexp{r.p.Composer.above})
}

// newestEntry reports whether the error line at e is part of the newest
// history entry above the composer at c: every line between them is blank,
// indented (a continuation) or box drawing.
func (r *region) newestEntry(e, c int) bool {
	if c < 0 {
		return true
	}
	for i := e + 1; i < c; i++ {
		if !neutral(r.lines[i].plain) {
			return false
		}
	}
	return e < c
}

func neutral(s string) bool {
	if s == "" || s[0] == ' ' || s[0] == '\t' {
		return true
	}
	return strings.Trim(s, "─━═╭╮╰╯│┃┌┐└┘ ") == ""
}

// draft extracts the human's unsubmitted text from the composer line at i
// (plus continuation lines below it).
func (r *region) draft(i int) string {
	c := &r.p.Composer
	l := r.lines[i]
	loc := c.prompt.FindStringIndex(l.plain)
	// The whole line a known placeholder, whatever its styles: a TUI may draw its fake
	// cursor (reverse video) over the placeholder's first letter, which is then not dim.
	whole := strings.TrimSpace(l.plain[loc[1]:])
	if c.trailer != nil {
		whole = strings.TrimSpace(c.trailer.ReplaceAllString(whole, ""))
	}
	if matchAny(c.placeholder, whole) {
		return ""
	}
	start := utf8.RuneCountInString(l.plain[:loc[1]])
	parts := []string{r.typed(l, start)}
	if c.continuation != nil {
		for j := i + 1; j < len(r.lines); j++ {
			m := c.continuation.FindStringSubmatchIndex(r.lines[j].plain)
			if m == nil || len(m) < 4 || m[2] < 0 {
				break
			}
			pl := r.lines[j].plain
			parts = append(parts, r.typed(r.lines[j], utf8.RuneCountInString(pl[:m[2]])))
		}
	}
	text := strings.TrimSpace(strings.Join(parts, " "))
	if c.trailer != nil {
		text = strings.TrimSpace(c.trailer.ReplaceAllString(text, ""))
	}
	for _, re := range c.placeholder {
		if re.MatchString(text) {
			return ""
		}
	}
	return text
}

// typed returns the runes of l from start on that are not drawn in a
// placeholder style, with spaces collapsed at the ends.
func (r *region) typed(l line, start int) string {
	var b strings.Builder
	for k := start; k < len(l.runes); k++ {
		if isPlaceholderStyle(l.style(k), r.p.Composer.PlaceholderStyle) && !unicode.IsSpace(l.runes[k]) {
			continue
		}
		b.WriteRune(l.runes[k])
	}
	return strings.TrimSpace(b.String())
}

func matchAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

func summarize(s string) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= maxSummary {
		return s
	}
	return string([]rune(s)[:maxSummary]) + "…"
}
