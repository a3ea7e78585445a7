package machine

import (
	"strings"
	"testing"

	"github.com/plangate/plangate/core/plan"
)

func TestGlobWithin(t *testing.T) {
	cases := []struct {
		plan, rule string
		want       bool
	}{
		{"docs/**", "docs/**", true},
		{"docs/guide.md", "docs/**", true},
		{"docs/a/b/*.txt", "docs/**", true},
		{"docs/*.md", "docs/**", true},
		{"docs/*.md", "*.md", true},
		{"README.md", "*.md", true},
		{"**/README.md", "*.md", true},
		{"README.md", "README.md", true},
		{"src/main.go", "docs/**", false},
		{"*.md", "docs/**", false}, // any depth, not only docs
		{"README.md", "docs/**", false},
		{"**", "docs/**", false},
		{"**", "*.md", false},
		{"**", "**", true},
		{"src/x.go", "**", true},
		{"docs/**", "*.md", false},
		{"docs", "docs/**", false}, // "docs" is a name at any depth, "a/docs" too
		{"docs/api", "docs/**", true},
		{"*", "*.md", false},
		{"{docs,src}/**", "docs/**", false},
		{"./docs/a.md/", "docs/**", true},
		{"README.md", "x/README.md", false}, // a name without a slash matches at any depth
		{"x/README.md", "**/README.md", true},
	}
	for _, tc := range cases {
		if got := globWithin(tc.plan, tc.rule); got != tc.want {
			t.Errorf("globWithin(%q, %q) = %v, want %v", tc.plan, tc.rule, got, tc.want)
		}
	}
}

func TestMatchAutoRule(t *testing.T) {
	docs := ApproveRule{Name: "docs-only", Paths: []string{"docs/**", "*.md"}, MaxSteps: 3}
	everything := ApproveRule{Name: "sandbox", Paths: []string{"**"}, AllowRunCommand: true, AllowTools: []string{"fs__write"}}
	steps := func(n int) []plan.Step {
		out := make([]plan.Step, n)
		for i := range out {
			out[i] = plan.Step{Text: "s"}
		}
		return out
	}
	cases := []struct {
		name  string
		rules []ApproveRule
		body  plan.Body
		rule  string
		why   string
	}{
		{"docs plan", []ApproveRule{docs}, plan.Body{Steps: steps(2), Scope: plan.Scope{AllowedPaths: []string{"docs/guide.md", "README.md"}}},
			"docs-only", "rule docs-only: 2 steps, every path under docs/** or *.md"},
		{"touches src", []ApproveRule{docs}, plan.Body{Steps: steps(1), Scope: plan.Scope{AllowedPaths: []string{"docs/**", "src/main.go"}}}, "", ""},
		{"no scope", []ApproveRule{docs, everything}, plan.Body{Steps: steps(1)}, "", ""},
		{"too many steps", []ApproveRule{docs}, plan.Body{Steps: steps(4), Scope: plan.Scope{AllowedPaths: []string{"README.md"}}}, "", ""},
		{"first rule that fits", []ApproveRule{docs, everything}, plan.Body{Steps: steps(4), Scope: plan.Scope{AllowedPaths: []string{"README.md"}}},
			"sandbox", "rule sandbox: 4 steps, every path under **"},
		{"whole workspace needs run_command", []ApproveRule{{Name: "all", Paths: []string{"**"}}}, plan.Body{Steps: steps(1), Scope: plan.Scope{AllowedPaths: []string{"**"}}}, "", ""},
		{"whole workspace with forbidden paths runs no commands", []ApproveRule{{Name: "all", Paths: []string{"**"}}},
			plan.Body{Steps: steps(1), Scope: plan.Scope{AllowedPaths: []string{"**"}, ForbiddenPaths: []string{".git/**"}}}, "all", "rule all: 1 step, every path under **"},
		{"run_command allowed", []ApproveRule{everything}, plan.Body{Steps: steps(1), Scope: plan.Scope{AllowedPaths: []string{"**"}}},
			"sandbox", "rule sandbox: 1 step, every path under **, commands allowed"},
		{"listed tool", []ApproveRule{everything}, plan.Body{Steps: steps(1), Scope: plan.Scope{AllowedPaths: []string{"a.txt"}, AllowedTools: []string{"fs__write"}}},
			"sandbox", "rule sandbox: 1 step, every path under **, tools fs__write"},
		{"unlisted tool", []ApproveRule{everything, docs}, plan.Body{Steps: steps(1), Scope: plan.Scope{AllowedPaths: []string{"a.md"}, AllowedTools: []string{"gh__merge"}}}, "", ""},
		{"command checks need run_command", []ApproveRule{docs}, plan.Body{Steps: steps(1), Scope: plan.Scope{AllowedPaths: []string{"docs/a.md"}},
			Verification: []plan.Check{{Argv: []string{"sh", "docs/check.sh"}}}}, "", ""},
		{"command checks with run_command", []ApproveRule{docs, everything}, plan.Body{Steps: steps(1), Scope: plan.Scope{AllowedPaths: []string{"docs/a.md"}},
			Verification: []plan.Check{{Text: "the guide reads well"}, {Argv: []string{"go", "test", "./..."}}}}, "sandbox", "rule sandbox: 1 step, every path under **, commands allowed"},
		{"checks in words run nothing", []ApproveRule{docs}, plan.Body{Steps: steps(1), Scope: plan.Scope{AllowedPaths: []string{"docs/a.md"}},
			Verification: []plan.Check{{Text: "the guide reads well"}}}, "docs-only", "rule docs-only: 1 step, every path under docs/** or *.md"},
		{"no rules", nil, plan.Body{Steps: steps(1), Scope: plan.Scope{AllowedPaths: []string{"a.md"}}}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, why, ok := MatchAutoRule(tc.rules, tc.body)
			if ok != (tc.rule != "") || r.Name != tc.rule || why != tc.why {
				t.Errorf("MatchAutoRule = %q, %q, %v; want %q, %q", r.Name, why, ok, tc.rule, tc.why)
			}
		})
	}
}

func TestAutoRuleProblems(t *testing.T) {
	if p := (ApproveRule{Name: "docs", Paths: []string{"docs/**"}}).Problems(); len(p) != 0 {
		t.Errorf("valid rule: %v", p)
	}
	got := strings.Join(ApproveRule{Paths: []string{"/etc/**", "../x"}, MaxSteps: -1}.Problems(), "\n")
	for _, want := range []string{"name is empty", `paths[0] "/etc/**" is absolute`, `paths[1] "../x" contains ".."`, "max_steps is -1"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q lack %q", got, want)
		}
	}
	if got := (ApproveRule{Name: "x"}).Problems(); len(got) != 1 || !strings.Contains(got[0], "paths is empty") {
		t.Errorf("rule without paths: %v", got)
	}
}
