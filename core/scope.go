package core

import (
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// WholeWorkspaceScope is the one scope entry that covers the whole workspace. Only a plan
// that lists it may run commands, which can change any file.
const WholeWorkspaceScope = "**"

// scopeNoFiles is the refusal for a mutating call under a plan that names no paths.
const scopeNoFiles = "this plan names no files it may change"

// checkScope decides whether a plan's scope lets a call change p, a cleaned
// workspace-relative path; "." stands for the whole workspace (run_command). It returns
// the reason for a refusal, worded for the model and the chat.
//
// Allowed and forbidden paths use the same matcher (scopeMatch), so what the person reads
// in the plan is what is enforced. A plan without allowed paths may change nothing.
func checkScope(s Scope, p string) (string, bool) {
	p = path.Clean(strings.TrimPrefix(p, "./"))
	if len(s.AllowedPaths) == 0 {
		return scopeNoFiles, false
	}
	if p == "." {
		if !scopeCoversAll(s.AllowedPaths) {
			return fmt.Sprintf("it may change any file, and the plan's scope does not cover the whole workspace (allowed: %s); only a plan that allows %q may run commands",
				strings.Join(s.AllowedPaths, ", "), WholeWorkspaceScope), false
		}
		if len(s.ForbiddenPaths) > 0 {
			// A command cannot honour a forbidden path, so a plan that forbids any
			// path does not allow it.
			return fmt.Sprintf("it may change any file, and the plan forbids %s", strings.Join(s.ForbiddenPaths, ", ")), false
		}
		return "", true
	}
	for _, f := range s.ForbiddenPaths {
		if scopeMatch(f, p) {
			return fmt.Sprintf("the path is forbidden by the plan's scope (%s)", f), false
		}
	}
	for _, a := range s.AllowedPaths {
		if scopeMatch(a, p) {
			return "", true
		}
	}
	return fmt.Sprintf("the path is outside the plan's scope (allowed: %s)", strings.Join(s.AllowedPaths, ", ")), false
}

// scopeCoversAll reports whether a list of scope entries includes the whole workspace.
func scopeCoversAll(patterns []string) bool {
	for _, a := range patterns {
		if normScopePattern(a) == WholeWorkspaceScope {
			return true
		}
	}
	return false
}

// scopeMatch reports whether a scope pattern covers p, a cleaned workspace-relative path
// other than ".". The rules are those of .gitignore, built on doublestar:
//
//   - a pattern without a slash matches a name at any depth: "*.env" covers "app/.env";
//   - a pattern with a slash is anchored at the workspace root: "cfg/*.yaml" covers
//     "cfg/a.yaml" but not "x/cfg/a.yaml" or "cfg/sub/a.yaml";
//   - "**" crosses directories: "**/*.pem" covers "id.pem" and "a/b/id.pem";
//   - a pattern that matches a directory covers everything under it: "secrets/*" covers
//     "secrets/prod/db.txt".
//
// A trailing slash is ignored: the tools cannot know whether a path that does not exist
// yet will be a directory, and for a forbidden path the wider reading is the safe one.
func scopeMatch(pattern, p string) bool {
	pat := normScopePattern(pattern)
	switch {
	case pat == "":
		return false
	case pat == WholeWorkspaceScope:
		return true
	case p == "." || p == "":
		return false // only "**" covers the whole workspace
	}
	if !strings.Contains(pat, "/") {
		pat = "**/" + pat
	}
	// p is covered when the pattern matches p itself or any directory above it.
	for prefix := p; ; {
		if ok, _ := doublestar.Match(pat, prefix); ok {
			return true
		}
		i := strings.LastIndexByte(prefix, '/')
		if i < 0 {
			return false
		}
		prefix = prefix[:i]
	}
}

// normScopePattern drops a leading "./" and a trailing "/" (the judge refuses both in new
// plans; older plans may still carry them).
func normScopePattern(p string) string {
	for strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	for len(p) > 1 && strings.HasSuffix(p, "/") {
		p = p[:len(p)-1]
	}
	return p
}

// validScopePattern reports whether doublestar can use p as a pattern.
func validScopePattern(p string) bool {
	return doublestar.ValidatePattern(p)
}

// ScopeSummary says in words what a plan may change, for the plan file and the chat:
// "the whole workspace", "no files", or the allowed paths, with what is forbidden.
func ScopeSummary(s Scope) string {
	var out string
	switch {
	case len(s.AllowedPaths) == 0:
		return "no files"
	case scopeCoversAll(s.AllowedPaths):
		out = "the whole workspace"
	default:
		out = strings.Join(s.AllowedPaths, ", ")
	}
	if len(s.ForbiddenPaths) > 0 {
		out += " except " + strings.Join(s.ForbiddenPaths, ", ")
	}
	return out
}

// ScopeChange says how a new version's scope differs from the old one, or returns "" when
// it allows and forbids the same: "scope widened: README.md → the whole workspace". A
// scope is wider when it keeps every allowed entry (or allows everything) and forbids no
// more; narrower the other way round.
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
	return scopeCoversAll(a.AllowedPaths) || (!scopeCoversAll(b.AllowedPaths) && subset(b.AllowedPaths, a.AllowedPaths))
}

// subset reports whether every entry of a is in b.
func subset(a, b []string) bool {
	for _, x := range a {
		found := false
		for _, y := range b {
			if normScopePattern(x) == normScopePattern(y) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
