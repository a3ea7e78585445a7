// Package plantest makes random plan bodies for property tests: text full of what the
// plan file's writer must escape, in the form the file carries.
package plantest

import (
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/plangate/plangate/core/plan"
)

// hostile are pieces of text the writer must escape so the file keeps its structure.
var hostile = []string{
	"#", "##", "*", "_", "_em_", "`", "``", "[", "]", "[x]", "<@U123>", "<@&9>", "<!channel>", "@here", "@everyone",
	"a@b.c", "@_x", "- ", "-", "+", "=", "1.", "2)", "10.", "&#64;", "&amp;", "&", "\\", "\\#", "|", "~~", ">", "<b>",
	"—", "&#8212;", "a—b", "(priority: high, complexity: small)", "Version", "---", "Allowed:", "Forbidden:",
	"!", "!", "é", "日本語", "a_b", "x*y", "**bold**", "(", ")", ":", "✓",
}

var plainWords = []string{"fix", "the", "README", "links", "add", "tests", "docs", "update", "CHANGELOG.md", "go", "vet", "step", "make", "API", "v2"}

// Line is a random line of plan text: plain words and hostile pieces.
func Line(r *rand.Rand) string {
	n := 1 + r.IntN(6)
	parts := make([]string, n)
	for i := range parts {
		if r.IntN(3) == 0 {
			parts[i] = hostile[r.IntN(len(hostile))]
		} else {
			parts[i] = plainWords[r.IntN(len(plainWords))]
		}
	}
	s := strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
	if s == "" {
		return "x"
	}
	return s
}

func genList(r *rand.Rand, max int) []string {
	var out []string
	for range r.IntN(max + 1) {
		out = append(out, Line(r))
	}
	return out
}

func genBlock(r *rand.Rand) string {
	var paras []string
	for range r.IntN(3) {
		var lines []string
		for range 1 + r.IntN(3) {
			lines = append(lines, Line(r))
		}
		paras = append(paras, strings.Join(lines, "\n"))
	}
	return strings.Join(paras, "\n\n")
}

var scopeSegments = []string{"docs", "src", "a_b", "*.md", "**", "README.md", "x`y", "@team", "[ab]c", "{a,b}", "é", "cfg", "*", "v1.2"}

func genPaths(r *rand.Rand) []string {
	var out []string
	for range r.IntN(4) {
		var segs []string
		for range 1 + r.IntN(3) {
			segs = append(segs, scopeSegments[r.IntN(len(scopeSegments))])
		}
		if p := strings.Join(segs, "/"); plan.ScopePathProblem(p) == "" {
			out = append(out, p)
		}
	}
	return out
}

func genSpec(r *rand.Rand) *plan.ProductSpec {
	if r.IntN(2) == 0 {
		return nil
	}
	sp := &plan.ProductSpec{Overview: genBlock(r), UserStories: genList(r, 3), TechStack: genList(r, 2), DesignDirection: genBlock(r)}
	for range r.IntN(4) {
		sp.Features = append(sp.Features, plan.Feature{Name: Line(r),
			Priority:   []string{"", "high", "medium", "low"}[r.IntN(4)],
			Complexity: []string{"", "small", "medium", "large"}[r.IntN(4)]})
	}
	return sp
}

// Body makes a random plan body in the form the file carries: trimmed single-spaced
// text, step ids "1", "2", ..., verified criteria a subset of the criteria.
func Body(r *rand.Rand) plan.Body {
	b := plan.Body{Title: Line(r), Summary: genBlock(r), Assumptions: genList(r, 3), Verification: plan.Words(genList(r, 2)...),
		References: genList(r, 2), Spec: genSpec(r),
		Scope: plan.Scope{AllowedPaths: genPaths(r), ForbiddenPaths: genPaths(r)}}
	if r.IntN(2) == 0 {
		b.Verification = append(b.Verification, genCommand(r))
	}
	if r.IntN(3) == 0 {
		b.Scope.AllowedTools = []string{"fs__write_file", "gh__create_issue"}[:1+r.IntN(2)]
	}
	statuses := []plan.StepStatus{plan.StepPending, plan.StepInProgress, plan.StepCompleted, plan.StepCancelled}
	for i := range 1 + r.IntN(5) {
		s := plan.Step{ID: strconv.Itoa(i + 1), Text: Line(r), Status: statuses[r.IntN(len(statuses))]}
		for _, c := range genList(r, 3) {
			if hasCriterion(s.AcceptanceCriteria, c) {
				continue
			}
			s.AcceptanceCriteria = append(s.AcceptanceCriteria, c)
			if r.IntN(2) == 0 {
				s.VerifiedCriteria = append(s.VerifiedCriteria, c)
			}
		}
		b.Steps = append(b.Steps, s)
	}
	for range r.IntN(3) {
		rk := plan.Risk{Risk: Line(r)}
		switch r.IntN(3) {
		case 0:
			rk.Mitigation = Line(r)
		case 1:
			rk.Risk, rk.Mitigation = "", Line(r)
		}
		b.Risks = append(b.Risks, rk)
	}
	return b
}

// hasCriterion matches criteria as the plan file does: ignoring case and runs of white space.
func hasCriterion(list []string, c string) bool {
	key := strings.Join(strings.Fields(c), " ")
	for _, x := range list {
		if strings.EqualFold(strings.Join(strings.Fields(x), " "), key) {
			return true
		}
	}
	return false
}

// genCommand makes a command check: plain words, arguments with spaces, quotes, backticks
// or brackets, and sometimes a name.
func genCommand(r *rand.Rand) plan.Check {
	args := []string{"go", "test", "./...", "-run", "Test X", `a"b`, "x`y", "[", "@here", "<b>", `c:\d`, "é"}
	c := plan.Check{Argv: []string{args[r.IntN(len(args))]}}
	for range r.IntN(4) {
		c.Argv = append(c.Argv, args[r.IntN(len(args))])
	}
	if r.IntN(2) == 0 {
		c.Name = Line(r)
	}
	return c
}
