package machine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// ApproveRule is one plan_mode.auto_approve_rules entry.
type ApproveRule struct {
	Name            string
	Paths           []string // scope globs; every allowed path of the plan must lie under one
	MaxSteps        int      // 0 = no limit beyond MaxSteps
	AllowRunCommand bool     // the plan may run commands: a scope of the whole workspace without forbidden paths, or command checks
	AllowTools      []string // MCP tools the plan may list in scope.allowed_tools
}

// Problems lists why r cannot be used as a rule, for config validation.
func (r ApproveRule) Problems() []string {
	var out []string
	if strings.TrimSpace(r.Name) == "" {
		out = append(out, "name is empty: name the rule, such as docs-only; the chat and the audit show it")
	}
	if len(r.Paths) == 0 {
		out = append(out, `paths is empty: list the globs the rule covers, such as ["docs/**", "*.md"]`)
	}
	for i, p := range r.Paths {
		if problem := plan.ScopePathProblem(p); problem != "" {
			out = append(out, fmt.Sprintf("paths[%d] %q %s", i, p, problem))
		}
	}
	if r.MaxSteps < 0 {
		out = append(out, fmt.Sprintf("max_steps is %d: it must be 0 (no limit) or more", r.MaxSteps))
	}
	return out
}

// MatchAutoRule returns the first rule (docs/design.md §12) that covers everything b may
// do, with why in words ("rule docs-only: 2 steps, every path under docs/** or *.md"). A
// plan without allowed paths never matches, nor one with a path not provably covered.
func MatchAutoRule(rules []ApproveRule, b plan.Body) (ApproveRule, string, bool) {
	if len(b.Scope.AllowedPaths) == 0 {
		return ApproveRule{}, "", false
	}
	for _, r := range rules {
		if why, ok := ruleAccepts(r, b); ok {
			return r, why, true
		}
	}
	return ApproveRule{}, "", false
}

func ruleAccepts(r ApproveRule, b plan.Body) (string, bool) {
	if r.MaxSteps > 0 && len(b.Steps) > r.MaxSteps {
		return "", false
	}
	for _, p := range b.Scope.AllowedPaths {
		if !slices.ContainsFunc(r.Paths, func(rp string) bool { return globWithin(p, rp) }) {
			return "", false
		}
	}
	_, runs := CheckScope(b.Scope, ".") // as the tool gate decides
	// A command check runs in the workspace like run_command, whatever the scope, and what
	// it runs (a test, a script) may be written after the acceptance.
	runs = runs || len(plan.Commands(b.Verification)) > 0
	if runs && !r.AllowRunCommand {
		return "", false
	}
	for _, t := range b.Scope.AllowedTools {
		if !slices.Contains(r.AllowTools, t) {
			return "", false
		}
	}
	why := fmt.Sprintf("rule %s: %d %s, every path under %s", r.Name, len(b.Steps), Plural(len(b.Steps), "step", "steps"), orList(r.Paths))
	if runs {
		why += ", commands allowed"
	}
	if len(b.Scope.AllowedTools) > 0 {
		why += ", tools " + strings.Join(b.Scope.AllowedTools, ", ")
	}
	return why, true
}

func orList(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// globWithin reports whether every path the plan glob p covers (scopeMatch semantics) is
// also covered by the rule glob r. It is conservative: true only when provable.
//   - "**" lies only within "**";
//   - a pattern whose leading directories are literal lies within r when r covers that
//     directory (scopeMatch covers everything under a directory it matches);
//   - a rule without a slash ("*.md") matches a name at any depth, so it covers a plan
//     pattern with a component it surely matches (the same pattern, or a literal name r
//     matches): "docs/*.md" and "**/README.md" lie within "*.md".
func globWithin(p, r string) bool {
	p, r = plan.NormPattern(p), plan.NormPattern(r)
	if r == plan.WholeWorkspaceScope {
		return true
	}
	if p == plan.WholeWorkspaceScope || p == "" || r == "" {
		return false
	}
	if p == r {
		return true
	}
	if rest, ok := strings.CutPrefix(r, "**/"); ok && !strings.Contains(rest, "/") {
		r = rest // "**/x" is how a slash-less pattern is matched anyway
	}
	if !strings.Contains(p, "/") {
		p = "**/" + p
	}
	segs := strings.Split(p, "/")
	if !strings.Contains(r, "/") {
		for _, s := range segs {
			if s == r || (!hasGlobMeta(s) && scopeMatch(r, s)) {
				return true
			}
		}
	}
	lit := 0
	for lit < len(segs) && !hasGlobMeta(segs[lit]) {
		lit++
	}
	return lit > 0 && scopeMatch(r, strings.Join(segs[:lit], "/"))
}

func hasGlobMeta(s string) bool { return strings.ContainsAny(s, `*?[]{}\`) }

// Actor is the audit actor of an acceptance by r: "rule:<name>".
func (r ApproveRule) Actor() core.Actor { return core.Actor{Kind: core.ActorRule, ID: r.Name} }
