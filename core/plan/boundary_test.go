package plan_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/plangate/plangate/core/plan"
)

func TestBoundaryInherit(t *testing.T) {
	b := plan.Boundary{ForbiddenPaths: []string{"deploy/**", "secrets/**"}, ForbiddenTools: []string{"gh__delete_repo"}, MaxFilesChanged: 20, MaxLinesChanged: 2000}
	body := plan.Body{Title: "T", Scope: plan.Scope{AllowedPaths: []string{"**"}, ForbiddenPaths: []string{"secrets/**"}, MaxLinesChanged: 50}}
	got := plan.Inherit(body, b)
	want := plan.Scope{AllowedPaths: []string{"**"}, ForbiddenPaths: []string{"secrets/**", "deploy/**"}, MaxFilesChanged: 20, MaxLinesChanged: 50, Operator: &b}
	if !reflect.DeepEqual(got.Scope, want) {
		t.Fatalf("inherited scope %+v, want %+v", got.Scope, want)
	}
	if len(body.Scope.ForbiddenPaths) != 1 || body.Scope.Operator != nil {
		t.Fatalf("Inherit changed the body it was given: %+v", body.Scope)
	}
	got.Scope.Operator.ForbiddenPaths[0] = "changed"
	if b.ForbiddenPaths[0] != "deploy/**" {
		t.Fatal("the inherited limits share their lists with the config")
	}
	if again := plan.Inherit(plan.Inherit(body, b), b); !reflect.DeepEqual(again.Scope.ForbiddenPaths, []string{"secrets/**", "deploy/**"}) {
		t.Fatalf("inheriting twice: %v", again.Scope.ForbiddenPaths)
	}
	if same := plan.Inherit(body, plan.Boundary{}); !reflect.DeepEqual(same, body) {
		t.Fatalf("an empty boundary changed the body: %+v", same.Scope)
	}
}

func TestBoundaryWordsAndProblems(t *testing.T) {
	b := plan.Boundary{ForbiddenPaths: []string{"deploy/**"}, ForbiddenTools: []string{"gh__delete_repo"}, MaxFilesChanged: 20, MaxLinesChanged: 2000, RequireVerification: true}
	if got, want := b.Words(), "never deploy/**; never the tools gh__delete_repo; at most 20 files, 2000 lines; a check plangate runs is required"; got != want {
		t.Errorf("Words = %q, want %q", got, want)
	}
	if p := b.Problems(); len(p) != 0 {
		t.Errorf("a good boundary has problems: %q", p)
	}
	bad := plan.Boundary{ForbiddenPaths: []string{"../x", "ok/**"}, ForbiddenTools: []string{"write_file"}, MaxLinesChanged: plan.MaxLinesBudget + 1}
	got := strings.Join(bad.Problems(), "\n")
	for _, w := range []string{`forbidden_paths[0] "../x" contains ".."`, `forbidden_tools[0] "write_file" is not an MCP tool's name`, "max_lines_changed is 1000001, more than"} {
		if !strings.Contains(got, w) {
			t.Errorf("problems lack %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "ok/**") {
		t.Errorf("a good entry is named among the problems:\n%s", got)
	}
}
