package plan

import (
	"strings"
	"testing"
)

// TestJudgePlanAllowedTools: scope.allowed_tools is what the gate lets run, and a person
// reads it in the chat; an entry that cannot be an MCP tool (<server>__<tool>) is refused
// rather than stored: "run_command" or "write_file" there allows nothing yet reads as if
// it did, and a direction override would reorder the chat line it is shown in.
func TestJudgePlanAllowedTools(t *testing.T) {
	ok := judgeOK()
	ok.Scope.AllowedTools = []string{"fs__write", "a__b__c", "my-srv__Tool_1"}
	if err := Judge(ok); err != nil {
		t.Fatalf("Judge(valid tools) = %v", err)
	}
	for _, bad := range []string{"run_command", "write_file", "fs__x\u202eevil", "fs__", "__x", "", " fs__write",
		"fs__" + strings.Repeat("a", 61), "fs__a b"} {
		b := judgeOK()
		b.Scope.AllowedTools = []string{bad}
		err := Judge(b)
		if err == nil || !strings.Contains(err.Error(), "scope.allowed_tools") {
			t.Errorf("Judge(allowed_tools %q) = %v, want a scope.allowed_tools problem", bad, err)
		}
	}
	b := judgeOK()
	for i := 0; i <= maxListItems; i++ {
		b.Scope.AllowedTools = append(b.Scope.AllowedTools, "fs__t"+strings.Repeat("x", i))
	}
	if err := Judge(b); err == nil || !strings.Contains(err.Error(), "scope.allowed_tools entries") {
		t.Errorf("Judge(%d tools) = %v, want a count problem", len(b.Scope.AllowedTools), err)
	}
}

// TestJudgeRefusalIsBounded: the refusal of a hostile plan (an edited file of 10,000
// identical steps, a 200 KB scope entry) is bounded; it is sent to the chat or the model.
func TestJudgeRefusalIsBounded(t *testing.T) {
	b := judgeOK()
	b.Steps = planSteps(strings.Split(strings.Repeat("a,", 10000)+"b", ",")...)
	b.Scope.AllowedPaths = []string{strings.Repeat("y", 200<<10)}
	err := Judge(b)
	if err == nil {
		t.Fatal("Judge = nil")
	}
	if n := len(err.Error()); n > 8<<10 {
		t.Errorf("the refusal is %d bytes, want at most 8 KB", n)
	}
	if !strings.Contains(err.Error(), "more problems") {
		t.Errorf("the refusal does not say that problems were left out:\n%.500s", err)
	}
	pe := (&ParseError{Line: 3, Msg: "unknown section " + strings.Repeat("A", 200<<10)}).Error()
	if len(pe) > 1<<10 {
		t.Errorf("a parse error is %d bytes, want at most 1 KB", len(pe))
	}
}
