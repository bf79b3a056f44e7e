package nudge

import "sort"

// DidYouMean returns the words of among nearest to word — a typo away: one edit (a letter
// added, dropped, changed, or two swapped) for a word of up to 6 letters, 2 for longer
// ones, a fifth of the length for long ids — those at the least distance, at most 3; nil
// when none is near. It compares bytes (ids and names are ASCII).
func DidYouMean(word string, among []string) []string {
	type near struct {
		s string
		d int
	}
	limit := max(2, len(word)/5)
	if len(word) <= 6 {
		limit = 1
	}
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

// editDistance is the edit distance of a and b (Levenshtein's, with two letters swapped
// one edit: the optimal string alignment distance), or limit+1 once it must exceed limit
// (words of very different lengths are not compared letter by letter).
func editDistance(a, b string, limit int) int {
	if abs(len(a)-len(b)) > limit || len(a) > 256 || len(b) > 256 {
		return limit + 1
	}
	prev2 := make([]int, len(b)+1) // row i-2
	prev := make([]int, len(b)+1)  // row i-1
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
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			best = min(best, cur[j])
		}
		if best > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
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
