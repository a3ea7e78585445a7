package plan

import (
	"fmt"
	"slices"
	"strings"
)

// A plan's scope in words, and the form of its entries; the gate matches paths against it.

// WholeWorkspaceScope is the one scope entry that covers the whole workspace. Only a plan
// that lists it may run commands, which can change any file.
const WholeWorkspaceScope = "**"

// CoversAll reports whether a list of scope entries includes the whole workspace.
func CoversAll(patterns []string) bool {
	return slices.ContainsFunc(patterns, func(a string) bool { return NormPattern(a) == WholeWorkspaceScope })
}

// NormPattern drops a leading "./" and a trailing "/" (the judge refuses both in new
// plans; older plans may still carry them).
func NormPattern(p string) string {
	for strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	for len(p) > 1 && strings.HasSuffix(p, "/") {
		p = p[:len(p)-1]
	}
	return p
}

// ScopeSummary says in words what a plan may change, for the plan file and the chat:
// "the whole workspace", "no files", or the allowed paths, with what is forbidden.
func ScopeSummary(s Scope) string {
	var out string
	switch {
	case len(s.AllowedPaths) == 0:
		return "no files"
	case CoversAll(s.AllowedPaths):
		out = "the whole workspace"
	default:
		out = strings.Join(s.AllowedPaths, ", ")
	}
	if len(s.ForbiddenPaths) > 0 {
		out += " except " + strings.Join(s.ForbiddenPaths, ", ")
	}
	return out
}

// ScopeChange says how a new version's scope differs ("scope widened: README.md → the
// whole workspace"), or "". Wider keeps every allowed entry (or allows everything) and
// forbids no more; narrower the other way round.
func ScopeChange(prev, next Scope) string {
	wider := allowsAtLeast(next, prev) && subset(next.ForbiddenPaths, prev.ForbiddenPaths)
	narrower := allowsAtLeast(prev, next) && subset(prev.ForbiddenPaths, next.ForbiddenPaths)
	verb := "changed"
	switch {
	case wider && narrower:
		return ""
	case wider:
		verb = "widened"
	case narrower:
		verb = "narrowed"
	}
	return fmt.Sprintf("scope %s: %s → %s", verb, ScopeSummary(prev), ScopeSummary(next))
}

// allowsAtLeast reports whether a allows every entry b allows.
func allowsAtLeast(a, b Scope) bool {
	return CoversAll(a.AllowedPaths) || (!CoversAll(b.AllowedPaths) && subset(b.AllowedPaths, a.AllowedPaths))
}

// subset reports whether every entry of a is in b.
func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y string) bool { return NormPattern(x) == NormPattern(y) }) {
			return false
		}
	}
	return true
}
