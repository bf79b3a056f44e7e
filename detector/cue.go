package detector

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Where a Cue counts, relative to the composer (Cue.Where).
const (
	// WhereRegion (or ""): anywhere in the prompt region.
	WhereRegion = "region"
	// WhereAboveComposer: one of the Cue.Within non-blank lines right above the composer
	// (a status row with its timer, the spinner row, a queued-message list).
	WhereAboveComposer = "above_composer"
	// WhereBelowComposer: under the composer line (the footer).
	WhereBelowComposer = "below_composer"
)

// DefaultWithin is Cue.Within when an above_composer cue leaves it zero.
const DefaultWithin = 3

// Cue is one readiness cue: a Go regexp matched against one ANSI-stripped screen line
// and, optionally, where it counts and how it must be drawn. The agent's own prose (a
// reply that says "Working on it", "Error: ..." or "Do you want to proceed?") is drawn
// above the composer, in the default colours; a TUI's chrome has its place (the status
// row right above the composer, the footer under it) and often its colour, so scoping a
// cue to them keeps prose from reading as a status line.
//
// In a pack file a cue is a string (the regexp, counting anywhere in the region) or an
// object: {"re": "...", "where": "above_composer", "within": 4, "style": "fg:31"}.
// When the screen has no composer, a scoped cue counts anywhere in the region.
type Cue struct {
	Re string `json:"re"`
	// Where is WhereRegion (or ""), WhereAboveComposer or WhereBelowComposer.
	Where string `json:"where,omitempty"`
	// Within is, for WhereAboveComposer, how many non-blank lines above the composer
	// count (0: DefaultWithin).
	Within int `json:"within,omitempty"`
	// Style, if set, is the SGR style the match's first character must be drawn in
	// ("dim" or "fg:<params>", as composer.placeholder_style). It is checked only on a
	// capture that carries attributes (capture-pane -e); a plain capture cannot tell
	// a red error line from the same words in prose, and the cue then counts anyway.
	Style string `json:"style,omitempty"`

	re *regexp.Regexp
}

// UnmarshalJSON takes a string (the regexp) or the object form.
func (c *Cue) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*c = Cue{}
		return json.Unmarshal(b, &c.Re)
	}
	type plain Cue
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*c = Cue(p)
	return nil
}

// MarshalJSON writes a cue without scope or style as its bare regexp.
func (c Cue) MarshalJSON() ([]byte, error) {
	if (c.Where == "" || c.Where == WhereRegion) && c.Style == "" {
		return json.Marshal(c.Re)
	}
	type plain Cue
	return json.Marshal(plain(c))
}

func (c *Cue) compile(field string) error {
	re, err := compileOne(field, c.Re)
	if err != nil {
		return err
	}
	switch c.Where {
	case "", WhereRegion, WhereAboveComposer, WhereBelowComposer:
	default:
		return fmt.Errorf("%s: where %q: want %q, %q or %q", field, c.Where, WhereRegion, WhereAboveComposer, WhereBelowComposer)
	}
	if c.Within < 0 {
		return fmt.Errorf("%s: within %d is negative", field, c.Within)
	}
	if c.Style != "" && c.Style != "dim" && !strings.HasPrefix(c.Style, "fg:") {
		return fmt.Errorf("%s: style %q: want \"dim\" or \"fg:<params>\"", field, c.Style)
	}
	c.re = re
	return nil
}

func compileCues(field string, cs []Cue) error {
	for i := range cs {
		if err := cs[i].compile(fmt.Sprintf("%s[%d]", field, i)); err != nil {
			return err
		}
	}
	return nil
}

// cueAt reports whether the line at i of the region matches c, in c's place (comp is the
// composer's index, -1 for none) and style.
func (r *region) cueAt(c *Cue, i, comp int) bool {
	if comp >= 0 {
		switch c.Where {
		case WhereAboveComposer:
			within := c.Within
			if within == 0 {
				within = DefaultWithin
			}
			if i >= comp || r.nonBlankBetween(i, comp) >= within {
				return false
			}
		case WhereBelowComposer:
			if i <= comp {
				return false
			}
		}
	}
	l := &r.lines[i]
	if c.Style == "" || !r.styled {
		return c.re.MatchString(l.plain)
	}
	loc := c.re.FindStringIndex(l.plain)
	if loc == nil {
		return false
	}
	// The first visible character of the match carries the style (a leading indent is
	// drawn in the default colours).
	k := utf8.RuneCountInString(l.plain[:loc[0]])
	for k < len(l.runes) && unicode.IsSpace(l.runes[k]) {
		k++
	}
	return k < len(l.runes) && isPlaceholderStyle(l.style(k), []string{c.Style})
}

// nonBlankBetween counts the non-blank lines strictly between i and j (i < j).
func (r *region) nonBlankBetween(i, j int) int {
	n := 0
	for k := i + 1; k < j; k++ {
		if strings.TrimSpace(r.lines[k].plain) != "" {
			n++
		}
	}
	return n
}

// lastCue returns the index of the bottom-most region line matching any of cs in its
// place, or -1.
func (r *region) lastCue(cs []Cue, comp int) int {
	for i := len(r.lines) - 1; i >= 0; i-- {
		if r.ignore[i] {
			continue
		}
		for k := range cs {
			if r.cueAt(&cs[k], i, comp) {
				return i
			}
		}
	}
	return -1
}

// matchesCue reports whether line i matches any of cs in its place.
func (r *region) matchesCue(cs []Cue, i, comp int) bool {
	if i < 0 {
		return false
	}
	for k := range cs {
		if r.cueAt(&cs[k], i, comp) {
			return true
		}
	}
	return false
}
