package plan

import (
	"fmt"
	"slices"
	"strings"
)

// Boundary is the operator's limits every plan inherits (plan_mode.boundary): paths no
// plan may change, MCP tools no plan may allow, the largest budgets, and whether a plan
// must declare a check plangate runs. A proposal that would widen it is refused (the
// machine's judge); one that stays inside carries it in its scope (Inherit), where the
// gate, the budget and every view of the plan find it.
type Boundary struct {
	ForbiddenPaths      []string `json:"forbidden_paths,omitempty" yaml:"forbidden_paths"`
	ForbiddenTools      []string `json:"forbidden_tools,omitempty" yaml:"forbidden_tools"`
	MaxFilesChanged     int      `json:"max_files_changed,omitempty" yaml:"max_files_changed"`
	MaxLinesChanged     int      `json:"max_lines_changed,omitempty" yaml:"max_lines_changed"`
	RequireVerification bool     `json:"require_verification,omitempty" yaml:"require_verification"`
}

// Empty reports whether b limits nothing.
func (b Boundary) Empty() bool {
	return len(b.ForbiddenPaths) == 0 && len(b.ForbiddenTools) == 0 && b.MaxFilesChanged == 0 &&
		b.MaxLinesChanged == 0 && !b.RequireVerification
}

// Problems are the reasons b cannot be a boundary, one per entry, each starting with its
// key under plan_mode.boundary ("forbidden_paths[1] …"); the config check reports them.
func (b Boundary) Problems() []string {
	var out []string
	for i, p := range b.ForbiddenPaths {
		if why := ScopePathProblem(p); why != "" {
			out = append(out, fmt.Sprintf("forbidden_paths[%d] %s %s", i, clipQuote(p), why))
		}
	}
	for i, t := range b.ForbiddenTools {
		if !isMCPToolName(t) {
			out = append(out, fmt.Sprintf("forbidden_tools[%d] %s is not an MCP tool's name (<server>__<tool>); to keep plans from running commands set tools.run_command.enabled: false, and to hide a tool from the agent altogether use its server's deny_tools", i, clipQuote(t)))
		}
	}
	var j judgeNotes
	j.budget("max_files_changed", b.MaxFilesChanged, MaxFilesBudget)
	j.budget("max_lines_changed", b.MaxLinesChanged, MaxLinesBudget)
	for _, p := range j {
		out = append(out, strings.TrimPrefix(p, "scope."))
	}
	return out
}

// Inherit is body with b in its scope: the operator's forbidden paths added to the plan's,
// each budget the operator's where the plan gives none (a larger one was refused), and
// b itself kept as the scope's Operator for the views that name where a limit came from.
// An empty b leaves body as it is.
func Inherit(body Body, b Boundary) Body {
	if b.Empty() {
		return body
	}
	sc := body.Scope
	sc.ForbiddenPaths = slices.Clone(sc.ForbiddenPaths)
	for _, f := range b.ForbiddenPaths {
		if !slices.Contains(sc.ForbiddenPaths, f) {
			sc.ForbiddenPaths = append(sc.ForbiddenPaths, f)
		}
	}
	if sc.MaxFilesChanged == 0 {
		sc.MaxFilesChanged = b.MaxFilesChanged
	}
	if sc.MaxLinesChanged == 0 {
		sc.MaxLinesChanged = b.MaxLinesChanged
	}
	op := b
	op.ForbiddenPaths, op.ForbiddenTools = slices.Clone(b.ForbiddenPaths), slices.Clone(b.ForbiddenTools)
	sc.Operator = &op
	body.Scope = sc
	return body
}

// Words is the operator's limits in one line for the plan's grants ("never deploy/**;
// never the tools gh__delete_repo; at most 20 files, 2000 lines; a check plangate runs
// is required").
func (b Boundary) Words() string {
	var parts []string
	if len(b.ForbiddenPaths) > 0 {
		parts = append(parts, "never "+strings.Join(b.ForbiddenPaths, ", "))
	}
	if len(b.ForbiddenTools) > 0 {
		parts = append(parts, "never the tools "+strings.Join(b.ForbiddenTools, ", "))
	}
	if w := (Scope{MaxFilesChanged: b.MaxFilesChanged, MaxLinesChanged: b.MaxLinesChanged}).BudgetWords(); w != "" {
		parts = append(parts, w)
	}
	if b.RequireVerification {
		parts = append(parts, "a check plangate runs is required")
	}
	return strings.Join(parts, "; ")
}
