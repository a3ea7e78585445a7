package machine_test

import (
	"strings"
	"testing"

	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

func TestWidens(t *testing.T) {
	b := plan.Boundary{ForbiddenPaths: []string{"deploy/**", "*.pem"}, ForbiddenTools: []string{"gh__delete_repo"}, MaxFilesChanged: 20, MaxLinesChanged: 100, RequireVerification: true}
	check := []plan.Check{{Argv: []string{"go", "test", "./..."}}}
	for _, tc := range []struct {
		name string
		body plan.Body
		want []string // a problem contains each; none for a plan inside the boundary
	}{
		{"inside", plan.Body{Scope: plan.Scope{AllowedPaths: []string{"**", "src/**"}, MaxFilesChanged: 20}, Verification: check}, nil},
		{"no budget of its own", plan.Body{Scope: plan.Scope{AllowedPaths: []string{"docs/**"}}, Verification: check}, nil},
		{"a path inside a forbidden one", plan.Body{Scope: plan.Scope{AllowedPaths: []string{"deploy/app.yaml", "deploy/**", "keys/id.pem"}}, Verification: check},
			[]string{`"deploy/app.yaml" lies inside "deploy/**"`, `"deploy/**" lies inside "deploy/**"`, `"keys/id.pem" lies inside "*.pem"`}},
		{"a forbidden tool", plan.Body{Scope: plan.Scope{AllowedTools: []string{"gh__create_issue", "gh__delete_repo"}}, Verification: check},
			[]string{`"gh__delete_repo" is a tool the operator forbids`}},
		{"larger budgets", plan.Body{Scope: plan.Scope{MaxFilesChanged: 21, MaxLinesChanged: 101}, Verification: check},
			[]string{"max_files_changed is 21, more than the operator's limit of 20", "max_lines_changed is 101, more than the operator's limit of 100"}},
		{"checks only in words", plan.Body{Verification: plan.Words("it works")}, []string{"plan_mode.boundary.require_verification"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := machine.Widens(tc.body, b)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d %q lacks %q", i, got[i], w)
				}
			}
		})
	}
	if got := machine.Widens(plan.Body{Scope: plan.Scope{AllowedPaths: []string{"deploy/**"}, MaxFilesChanged: 99}}, plan.Boundary{}); len(got) != 0 {
		t.Errorf("no boundary, problems %q", got)
	}
}
