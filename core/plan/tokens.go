package plan

import (
	"fmt"
	"strconv"
)

// Tokens counts model tokens as the API's usage reports them, summed over calls: Prompt
// includes Cached (prompt_tokens_details.cached_tokens, the prefix the server served from
// its cache), Completion is the answer. Calls is how many model calls were added and
// Unreported how many of them came without any usage (the script provider, a server that
// sends none), whose tokens are unknown rather than zero.
type Tokens struct {
	Prompt     int64 `json:"prompt"`
	Cached     int64 `json:"cached"`
	Completion int64 `json:"completion"`
	Calls      int64 `json:"calls"`
	Unreported int64 `json:"unreported,omitempty"`
}

// Total is the tokens a budget counts: prompt (cached included) plus completion.
func (t Tokens) Total() int64 { return t.Prompt + t.Completion }

// IsZero reports whether nothing was counted.
func (t Tokens) IsZero() bool { return t == Tokens{} }

// Add is the sum of t and u.
func (t Tokens) Add(u Tokens) Tokens {
	return Tokens{Prompt: t.Prompt + u.Prompt, Cached: t.Cached + u.Cached, Completion: t.Completion + u.Completion,
		Calls: t.Calls + u.Calls, Unreported: t.Unreported + u.Unreported}
}

// Words are the counts for people: "41k tokens, 30k cached"; "no model calls" before the
// first, "not reported" when no call reported its usage, and the calls that did not
// named when only some did ("41k tokens, 30k cached (2 calls not reported)").
func (t Tokens) Words() string {
	switch {
	case t.Calls == 0:
		return "no model calls"
	case t.Unreported >= t.Calls:
		return "tokens not reported"
	}
	s := TokenCount(t.Total()) + " tokens, " + TokenCount(t.Cached) + " cached"
	if t.Unreported > 0 {
		s += " (" + plural(int(t.Unreported), "call", "calls") + " not reported)"
	}
	return s
}

// TokenCount is a count of tokens rounded for reading: 950, 41k, 1.2M.
func TokenCount(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 999_500: // rounds to 999k at most
		return strconv.FormatInt((n+500)/1000, 10) + "k"
	}
	return trimZero(fmt.Sprintf("%.1f", float64(n)/1e6)) + "M"
}

// trimZero drops a ".0" from a one-decimal number.
func trimZero(s string) string {
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		return s[:len(s)-2]
	}
	return s
}
