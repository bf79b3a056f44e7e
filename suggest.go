package nudge

import "sort"

// DidYouMean returns the words of among nearest to word — a typo away: at most 2 edits,
// or a fifth of the word's length for longer ones — those at the least distance, at most
// 3; nil when none is near. It compares bytes (ids and names are ASCII).
func DidYouMean(word string, among []string) []string {
	type near struct {
		s string
		d int
	}
	limit := max(2, len(word)/5)
	var found []near
	for _, s := range among {
		if s == word {
			continue
		}
		if d := editDistance(word, s, limit); d <= limit {
			found = append(found, near{s, d})
		}
	}
	sort.SliceStable(found, func(i, j int) bool {
		if found[i].d != found[j].d {
			return found[i].d < found[j].d
		}
		return found[i].s < found[j].s
	})
	var out []string
	for i := 0; i < len(found) && i < 3 && found[i].d == found[0].d; i++ {
		out = append(out, found[i].s)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b, or limit+1 once it must exceed
// limit (words of very different lengths are not compared letter by letter).
func editDistance(a, b string, limit int) int {
	if abs(len(a)-len(b)) > limit || len(a) > 256 || len(b) > 256 {
		return limit + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			best = min(best, cur[j])
		}
		if best > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// Suggest is DidYouMean as the end of a message: " (did you mean a or b?)", or "".
func Suggest(word string, among []string) string {
	near := DidYouMean(word, among)
	switch len(near) {
	case 0:
		return ""
	case 1:
		return " (did you mean " + near[0] + "?)"
	}
	s := " (did you mean "
	for i, n := range near {
		switch {
		case i == len(near)-1:
			s += " or "
		case i > 0:
			s += ", "
		}
		s += n
	}
	return s + "?)"
}
