package detector

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ours reports whether composer is typed, or a part of it (an editor scrolled to the
// end of a long text), or typed as the agent shows it after folding a large paste into
// placeholders (Codex's "[Pasted Content 4096 chars][Pasted Content 1525
// chars]", Claude Code's "[Pasted text #1 +40 lines]"): at least one placeholder, the
// text outside the placeholders is a part of typed, and the sizes the placeholders give
// add up to what was typed. A CLI counts characters or lines its own way (UTF-16 units,
// lines or line breaks), so the sizes need only come close: within 5% plus a few per
// placeholder. A placeholder that gives no size (Claude Code's "[Pasted text #2]")
// counts as any size.
func (p *Pack) Ours(composer, typed string) bool {
	if composer == "" || typed == "" || len(p.Composer.folded) == 0 {
		return false
	}
	var chars, lines, n, sizeless int
	rest := composer
	var outside strings.Builder
	for rest != "" {
		start, end, c, l, ok := p.nextFold(rest)
		if !ok {
			outside.WriteString(rest)
			break
		}
		outside.WriteString(rest[:start])
		outside.WriteByte(' ')
		rest = rest[end:]
		n++
		switch {
		case c >= 0:
			chars += c
		case l >= 0:
			lines += l
		default:
			sizeless++
		}
	}
	if n == 0 {
		return partOf(composer, typed)
	}
	flat := strings.Join(strings.Fields(typed), " ")
	lit := strings.Fields(outside.String())
	litRunes := 0
	for _, w := range lit {
		if !strings.Contains(flat, w) {
			return false
		}
		litRunes += utf8.RuneCountInString(w) + 1
	}
	if sizeless > 0 && chars == 0 && lines == 0 {
		return true
	}
	if lines > 0 {
		// A line count: each placeholder may count lines or line breaks.
		want := strings.Count(typed, "\n") + 1
		return lines >= want-n-1 && lines <= want+n
	}
	want := utf8.RuneCountInString(typed)
	got := chars + litRunes
	tol := want/20 + 8*n
	return got >= want-tol && got <= want+tol
}

// Holds reports whether composer still holds typed, among other things: Ours, or one
// of its placeholders is typed's fold by itself (an agent that takes pastes while busy
// may show several prompts folded in its composer, one under the other).
func (p *Pack) Holds(composer, typed string) bool {
	if p.Ours(composer, typed) {
		return true
	}
	for rest := composer; rest != ""; {
		_, end, c, l, ok := p.nextFold(rest)
		if !ok {
			return false
		}
		if foldOf(c, l, typed) {
			return true
		}
		rest = rest[end:]
	}
	return false
}

// OursAll reports whether composer is made of nudge's texts only: Ours for one of typed,
// or placeholders each of which is the fold of one of typed, and nothing else.
func (p *Pack) OursAll(composer string, typed []string) bool {
	for _, t := range typed {
		if t != "" && p.Ours(composer, t) {
			return true
		}
	}
	n := 0
	var outside strings.Builder
	for rest := composer; rest != ""; n++ {
		start, end, c, l, ok := p.nextFold(rest)
		if !ok {
			outside.WriteString(rest)
			break
		}
		outside.WriteString(rest[:start])
		if !slices.ContainsFunc(typed, func(t string) bool { return t != "" && foldOf(c, l, t) }) {
			return false
		}
		rest = rest[end:]
	}
	return n > 0 && strings.TrimSpace(outside.String()) == ""
}

// foldOf reports whether a placeholder of chars characters or lines lines (-1: not
// given) is the fold of typed alone.
func foldOf(chars, lines int, typed string) bool {
	switch {
	case chars >= 0:
		want := utf8.RuneCountInString(typed)
		return chars >= want-want/20-8 && chars <= want+want/20+8
	case lines >= 0:
		want := strings.Count(typed, "\n") + 1
		return lines >= want-2 && lines <= want+1
	}
	return false // a placeholder without a size is nobody's in particular
}

// minPart is the shortest composer text (without whitespace) that partOf takes for a
// part of what was typed.
const minPart = 16

// partOf reports whether composer is a part of typed, whitespace aside: an editor that
// shows only the end of a long text (Pi's "↑ 74 more"), or one still taking in the keys.
// Wrapping may split a line anywhere, so all whitespace is ignored.
func partOf(composer, typed string) bool {
	c := dropSpace(composer)
	return utf8.RuneCountInString(c) >= minPart && strings.Contains(dropSpace(typed), c)
}

func dropSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// nextFold finds the first placeholder of any folded pattern in s: its byte span and the
// size its "chars" or "lines" group gives (-1: none).
func (p *Pack) nextFold(s string) (start, end, chars, lines int, ok bool) {
	start = -1
	for _, re := range p.Composer.folded {
		m := re.FindStringSubmatchIndex(s)
		if m == nil || (start >= 0 && m[0] >= start) {
			continue
		}
		start, end, chars, lines, ok = m[0], m[1], -1, -1, true
		for k, name := range re.SubexpNames() {
			if m[2*k] < 0 {
				continue
			}
			v, err := strconv.Atoi(s[m[2*k]:m[2*k+1]])
			if err != nil {
				continue
			}
			switch name {
			case "chars":
				chars = v
			case "lines":
				lines = v
			}
		}
	}
	return start, end, chars, lines, ok
}
