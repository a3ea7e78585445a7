package machine

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/plangate/plangate/core/plan"
)

// Widens says, one problem per line worded for the model, where body's plan would go past
// b: an allowed path that lies inside a forbidden one, a forbidden tool allowed, a budget
// above the operator's, or no command check where one is required. Leaving a budget out is
// not widening: the plan inherits the operator's.
func Widens(body plan.Body, b plan.Boundary) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, a := range body.Scope.AllowedPaths {
		for _, f := range b.ForbiddenPaths {
			if globWithin(a, f) {
				add("scope.allowed_paths entry %s lies inside %s, which the operator forbids to every plan (plan_mode.boundary.forbidden_paths); leave it out", strconv.Quote(a), strconv.Quote(f))
				break
			}
		}
	}
	for _, t := range body.Scope.AllowedTools {
		if slices.Contains(b.ForbiddenTools, t) {
			add("scope.allowed_tools entry %s is a tool the operator forbids to every plan (plan_mode.boundary.forbidden_tools); leave it out and do without it", strconv.Quote(t))
		}
	}
	over := func(name string, n, most int) {
		if most > 0 && n > most {
			add("scope.%s is %d, more than the operator's limit of %d (plan_mode.boundary.%s); give at most %d, or leave it out to take %d", name, n, most, name, most, most)
		}
	}
	over("max_files_changed", body.Scope.MaxFilesChanged, b.MaxFilesChanged)
	over("max_lines_changed", body.Scope.MaxLinesChanged, b.MaxLinesChanged)
	if b.RequireVerification && !slices.ContainsFunc(body.Verification, plan.Check.IsCommand) {
		add(`the operator requires every plan to declare a check plangate runs (plan_mode.boundary.require_verification); add one to "verification": [{"argv": ["go", "test", "./..."]}]`)
	}
	return out
}
