package core

import (
	"slices"
	"strings"
)

// A plan's scope in words, for the chat: what the person reads when deciding is what the
// gate enforces, so the message names it plainly.

// wholeScope is the scope entry that allows every path (and run_command).
const wholeScope = "**"

// scopeIsWhole reports whether the scope allows every path.
func scopeIsWhole(s Scope) bool { return slices.Contains(s.AllowedPaths, wholeScope) }

// scopeLine is the proposal's line about its scope: "May change: README.md, docs/**",
// "May change: the whole workspace", or that the plan names no files, with what it
// forbids.
func scopeLine(s Scope) string {
	line := "May change: " + allowedWords(s)
	if len(s.AllowedPaths) == 0 {
		line = "May change: nothing (this plan names no files it may change)"
	}
	if len(s.ForbiddenPaths) > 0 {
		line += " · never: " + strings.Join(s.ForbiddenPaths, ", ")
	}
	return line
}

// allowedWords names what a scope allows: its entries, "the whole workspace" or "no files".
func allowedWords(s Scope) string {
	switch {
	case scopeIsWhole(s):
		return "the whole workspace"
	case len(s.AllowedPaths) == 0:
		return "no files"
	}
	return strings.Join(s.AllowedPaths, ", ")
}

// scopeWords is allowedWords with what the scope forbids: "docs/** (never docs/secret/**)".
func scopeWords(s Scope) string {
	w := allowedWords(s)
	if len(s.ForbiddenPaths) > 0 {
		w += " (never " + strings.Join(s.ForbiddenPaths, ", ") + ")"
	}
	return w
}

// scopeDiff says how a new version's scope differs from the old one's: "scope widened:
// README.md → the whole workspace" when it may change anything the old one could not,
// else "scope narrowed: …"; "" when it is the same.
func scopeDiff(old, cur Scope) string {
	if slices.Equal(old.AllowedPaths, cur.AllowedPaths) && slices.Equal(old.ForbiddenPaths, cur.ForbiddenPaths) {
		return ""
	}
	verb := "changed"
	switch {
	case widens(old, cur):
		verb = "widened"
	case widens(cur, old):
		verb = "narrowed"
	}
	return "scope " + verb + ": " + scopeWords(old) + " → " + scopeWords(cur)
}

// widens reports whether cur may change something old may not, judged on the entries
// (a new allowed entry, or a forbidden entry dropped), as the person reads them.
func widens(old, cur Scope) bool {
	if scopeIsWhole(cur) && !scopeIsWhole(old) {
		return true
	}
	if !scopeIsWhole(old) {
		for _, a := range cur.AllowedPaths {
			if !slices.Contains(old.AllowedPaths, a) {
				return true
			}
		}
	}
	for _, f := range old.ForbiddenPaths {
		if !slices.Contains(cur.ForbiddenPaths, f) {
			return true
		}
	}
	return false
}
