package machine

import (
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/plangate/plangate/core/plan"
)

// scopeNoFiles is the refusal for a mutating call under a plan that names no paths.
const scopeNoFiles = "this plan names no files it may change"

// CheckScope decides whether a plan's scope lets a call change p, a cleaned
// workspace-relative path ("." is the whole workspace: run_command), or why not. Allowed
// and forbidden paths use one matcher, so what the person reads is what is enforced.
func CheckScope(s plan.Scope, p string) (string, bool) {
	p = path.Clean(strings.TrimPrefix(p, "./"))
	if len(s.AllowedPaths) == 0 {
		return scopeNoFiles, false
	}
	if p == "." {
		if !plan.CoversAll(s.AllowedPaths) {
			return fmt.Sprintf("it may change any file, and the plan's scope does not cover the whole workspace (allowed: %s); only a plan that allows %q may run commands",
				strings.Join(s.AllowedPaths, ", "), plan.WholeWorkspaceScope), false
		}
		if len(s.ForbiddenPaths) > 0 {
			// A command cannot honour a forbidden path, so a plan that forbids any
			// path does not allow it.
			return fmt.Sprintf("it may change any file, and the plan forbids %s", strings.Join(s.ForbiddenPaths, ", ")), false
		}
		return "", true
	}
	if f, ok := ForbiddenBy(s, p); ok {
		return fmt.Sprintf("the path is forbidden by the plan's scope (%s)", f), false
	}
	for _, a := range s.AllowedPaths {
		if scopeMatch(a, p) {
			return "", true
		}
	}
	return fmt.Sprintf("the path is outside the plan's scope (allowed: %s)", strings.Join(s.AllowedPaths, ", ")), false
}

// ForbiddenBy returns the entry of s.ForbiddenPaths that covers p, a cleaned
// workspace-relative path, as CheckScope matches it; false when none does.
func ForbiddenBy(s plan.Scope, p string) (string, bool) {
	p = path.Clean(strings.TrimPrefix(p, "./"))
	for _, f := range s.ForbiddenPaths {
		if scopeMatch(f, p) {
			return f, true
		}
	}
	return "", false
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
	pat := plan.NormPattern(pattern)
	switch {
	case pat == "":
		return false
	case pat == plan.WholeWorkspaceScope:
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
