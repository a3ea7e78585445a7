package plan

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func manyTexts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "step " + strconv.Itoa(i+1)
	}
	return out
}

// Verification accumulates over several calls, as it does during a real run.
func TestApplyUpdateAccumulates(t *testing.T) {
	steps := []Step{{ID: "1", Text: "Fix links", Status: StepPending, AcceptanceCriteria: []string{"a", "b"}}}
	calls := []UpdateArgs{
		{Merge: true, Plan: []StepUpdate{{Step: "Fix links", Status: StepInProgress, VerifiedCriteria: []string{"b"}}}},
		{Merge: true, Plan: []StepUpdate{{Step: "Fix links", Status: StepInProgress, VerifiedCriteria: []string{"a"}}}},
		{Merge: true, Plan: []StepUpdate{{Step: "Fix links", Status: StepCompleted}}},
	}
	for i, u := range calls {
		next, err := ApplyUpdate(steps, u)
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		steps = next
	}
	if steps[0].Status != StepCompleted || !reflect.DeepEqual(steps[0].VerifiedCriteria, []string{"a", "b"}) {
		t.Fatalf("after three calls: %+v, want completed with a and b verified", steps[0])
	}
	if !AllDone(steps) {
		t.Errorf("AllDone = false after the only step completed")
	}

	// The result must not share criteria slices with the input.
	next, err := ApplyUpdate(steps, UpdateArgs{Merge: true, Plan: []StepUpdate{{Step: "Fix links", Status: StepCompleted}}})
	if err != nil {
		t.Fatal(err)
	}
	next[0].AcceptanceCriteria[0] = "changed"
	if steps[0].AcceptanceCriteria[0] != "a" {
		t.Errorf("ApplyUpdate result aliases the input's criteria")
	}
}

func TestAllDone(t *testing.T) {
	cases := []struct {
		name  string
		steps []Step
		want  bool
	}{
		{"no steps", nil, false},
		{"all completed", withStatus(planSteps("a", "b"), StepCompleted, StepCompleted), true},
		{"completed and cancelled", withStatus(planSteps("a", "b"), StepCompleted, StepCancelled), true},
		{"all cancelled", withStatus(planSteps("a"), StepCancelled), true},
		{"one pending", withStatus(planSteps("a", "b"), StepCompleted), false},
		{"one in progress", withStatus(planSteps("a", "b"), StepCompleted, StepInProgress), false},
		{"zero status", []Step{{ID: "1", Text: "a"}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := AllDone(tc.steps); got != tc.want {
				t.Errorf("AllDone = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHashPlan(t *testing.T) {
	base := func() Body {
		return Body{
			Title:   "Docs cleanup",
			Summary: "s",
			Steps: []Step{
				{ID: "1", Text: "a", Status: StepPending, AcceptanceCriteria: []string{"c1"}},
				{ID: "2", Text: "b", Status: StepPending},
			},
			Assumptions: []string{"x"},
			Risks:       []Risk{{Risk: "r", Mitigation: "m"}},
			Scope:       Scope{AllowedPaths: []string{"docs/**"}},
		}
	}
	h := Hash(base())
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		t.Fatalf("Hash = %q, want 64 lower-case hex digits", h)
	}

	same := map[string]func(*Body){
		"step statuses": func(b *Body) { b.Steps[0].Status = StepCompleted; b.Steps[1].Status = StepInProgress },
		"verified":      func(b *Body) { b.Steps[0].VerifiedCriteria = []string{"c1"} },
		"step ids":      func(b *Body) { b.Steps[0].ID, b.Steps[1].ID = "9", "10" },
		"empty lists": func(b *Body) {
			b.References = []string{}
			b.Verification = []Check{}
			b.Scope.ForbiddenPaths = []string{}
		},
	}
	for name, change := range same {
		t.Run("ignores "+name, func(t *testing.T) {
			b := base()
			change(&b)
			if got := Hash(b); got != h {
				t.Errorf("hash changed: %s != %s", got, h)
			}
		})
	}
	different := map[string]func(*Body){
		"title":         func(b *Body) { b.Title = "Docs clean-up" },
		"summary":       func(b *Body) { b.Summary = "" },
		"step text":     func(b *Body) { b.Steps[1].Text = "B" },
		"step order":    func(b *Body) { b.Steps[0], b.Steps[1] = b.Steps[1], b.Steps[0] },
		"criteria":      func(b *Body) { b.Steps[1].AcceptanceCriteria = []string{"c2"} },
		"assumptions":   func(b *Body) { b.Assumptions = nil },
		"risk":          func(b *Body) { b.Risks[0].Mitigation = "n" },
		"verification":  func(b *Body) { b.Verification = Words("v") },
		"allowed path":  func(b *Body) { b.Scope.AllowedPaths = []string{"docs/*"} },
		"moved to deny": func(b *Body) { b.Scope.ForbiddenPaths, b.Scope.AllowedPaths = b.Scope.AllowedPaths, nil },
		"references":    func(b *Body) { b.References = []string{"r"} },
		"extra step":    func(b *Body) { b.Steps = append(b.Steps, Step{ID: "3", Text: "c"}) },
	}
	for name, change := range different {
		t.Run("changes with "+name, func(t *testing.T) {
			b := base()
			change(&b)
			if got := Hash(b); got == h {
				t.Errorf("hash did not change")
			}
		})
	}

	// A re-proposal with the same content in different JSON hashes the same.
	p1, err1 := ParseProposal(json.RawMessage(`{"title":"T","plan":[{"step":"a"}],"scope":{"allowed_paths":["x"]}}`))
	p2, err2 := ParseProposal(json.RawMessage(`{ "scope": {"allowed_paths": [" x "], "forbidden_paths": []},
		"plan": [{"step": "a ", "acceptance_criteria": []}], "title": " T", "references": [] }`))
	if err1 != nil || err2 != nil {
		t.Fatalf("ParseProposal: %v, %v", err1, err2)
	}
	if Hash(p1) != Hash(p2) {
		t.Errorf("same proposal, different hashes:\n%+v\n%+v", p1, p2)
	}
}
