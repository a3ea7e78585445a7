package plan

import (
	"slices"
	"strings"
	"testing"
)

// The budget is a tool argument, judged, rendered in the file's scope and read back.
func TestBudgetArgumentsFileAndJudge(t *testing.T) {
	args := `{"title":"T","plan":[{"step":"a"}],"scope":{"allowed_paths":["src/**"],"max_files_changed":3,"max_lines_changed":100}}`
	b, err := ParseProposal([]byte(args))
	if err != nil {
		t.Fatal(err)
	}
	if b.Scope.MaxFilesChanged != 3 || b.Scope.MaxLinesChanged != 100 {
		t.Fatalf("scope %+v", b.Scope)
	}
	if err := Judge(b); err != nil {
		t.Fatalf("judge: %v", err)
	}
	if got := b.Scope.BudgetWords(); got != "at most 3 files, 100 lines" {
		t.Fatalf("words %q", got)
	}
	md := Render(File{Body: b, Version: 1, Status: "pending"})
	if !strings.Contains(string(md), "\n## Scope\n\nMay change at most 3 files, 100 lines.\n") {
		t.Fatalf("file lacks the budget:\n%s", md)
	}
	back, err := ParseMarkdown(md)
	if err != nil {
		t.Fatal(err)
	}
	if back.Scope.MaxFilesChanged != 3 || back.Scope.MaxLinesChanged != 100 || Hash(back) != Hash(b) {
		t.Fatalf("read back %+v", back.Scope)
	}
	noBudget := b
	noBudget.Scope.MaxFilesChanged, noBudget.Scope.MaxLinesChanged = 0, 0
	if Hash(noBudget) == Hash(b) {
		t.Fatal("the budget is not part of the hash")
	}

	// One budget alone, edited by hand.
	edited := strings.Replace(string(md), "May change at most 3 files, 100 lines.", "May change at most 1 line.", 1)
	back, err = ParseMarkdown([]byte(edited))
	if err != nil || back.Scope.MaxFilesChanged != 0 || back.Scope.MaxLinesChanged != 1 {
		t.Fatalf("edited budget: %+v, %v", back.Scope, err)
	}

	// A new version that changes only the budget says so.
	if d := Compare(b, noBudget); d.Empty() || !slices.Contains(d.Changed, "budget") {
		t.Fatalf("compare %+v, want the budget changed", d)
	}

	for _, tc := range []struct{ args, want string }{
		{`{"max_files_changed":-1}`, "scope.max_files_changed is -1"},
		{`{"max_lines_changed":2000000}`, "more than the 1000000"},
		{`{"max_files_changed":10001}`, "more than the 10000"},
	} {
		b, err := ParseProposal([]byte(`{"title":"T","plan":[{"step":"a"}],"scope":` + tc.args + `}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := Judge(b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("judge %s: %v, want %q", tc.args, err, tc.want)
		}
	}
	if _, err := ParseProposal([]byte(`{"title":"T","plan":[{"step":"a"}],"scope":{"max_files_changed":2.5}}`)); err == nil {
		t.Error("a fractional budget was accepted")
	}
	if _, err := ParseProposal([]byte(`{"title":"T","plan":[{"step":"a"}],"scope":{"max_files_changed":"3"}}`)); err == nil {
		t.Error("a budget as a string was accepted")
	}
}
