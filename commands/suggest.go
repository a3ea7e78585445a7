package commands

import (
	"strings"
	"unicode/utf8"
)

// maxPrefixMatches bounds how many subcommands an ambiguous prefix may suggest at once.
const maxPrefixMatches = 3

// suggest returns the candidates a mistyped word most likely meant: those it is a prefix of
// ("acc" -> accept; "a" -> accept, answer, auto), else those closest by Damerau-Levenshtein
// distance within a third of the candidate's length (at least one edit). Ties are all
// returned, in candidate order. Nothing close returns nil: a wild guess is worse than none.
func suggest(word string, candidates []string) []string {
	w := strings.ToLower(word)
	if w == "" {
		return nil
	}
	var prefixed []string
	for _, c := range candidates {
		if strings.HasPrefix(c, w) {
			prefixed = append(prefixed, c)
		}
	}
	if len(prefixed) > 0 && len(prefixed) <= maxPrefixMatches {
		return prefixed
	}

	wr := []rune(w)
	best := -1
	var out []string
	for _, c := range candidates {
		limit := max(1, utf8.RuneCountInString(c)/3)
		cr := []rune(c)
		if len(wr)-len(cr) > limit || len(cr)-len(wr) > limit {
			continue // cheap reject; also keeps pasted essays from costing a full matrix
		}
		d := distance(wr, cr)
		switch {
		case d > limit:
		case best < 0 || d < best:
			best, out = d, []string{c}
		case d == best:
			out = append(out, c)
		}
	}
	return out
}

// distance is the optimal-string-alignment Damerau-Levenshtein distance: insertions,
// deletions, substitutions and swaps of adjacent runes ("acpcet") each cost one.
func distance(a, b []rune) int {
	// Three rolling rows: the swap case looks two rows back.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
