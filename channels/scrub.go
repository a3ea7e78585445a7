package channels

import (
	"cmp"
	"slices"
	"strings"
)

// ScrubSecrets returns s with every occurrence of each secret replaced by "<token>", so
// that error text and logs never carry a credential. Empty secrets are skipped (replacing
// "" would insert the marker everywhere). Longer secrets are replaced first, so that a
// secret containing a shorter one (a token and its escaped form, say) is removed whole
// rather than leaving a fragment behind.
func ScrubSecrets(s string, secrets ...string) string {
	if len(secrets) == 0 {
		return s
	}
	sorted := slices.Clone(secrets)
	slices.SortStableFunc(sorted, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, sec := range sorted {
		if sec == "" {
			continue
		}
		s = strings.ReplaceAll(s, sec, "<token>")
	}
	return s
}
