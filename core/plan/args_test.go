package plan

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParseProposal(t *testing.T) {
	full := `{
		"title": "  Docs   cleanup\n",
		"summary": "  Reword the intro.\n\nFix links.  ",
		"plan": [
			{"step": " Reword the README introduction ", "acceptance_criteria": [" under 100 words ", "", "  "]},
			{"step": "Fix broken links"}
		],
		"assumptions": ["docs are markdown", " "],
		"risks": [{"risk": " links break ", "mitigation": " run the checker "}, {"risk": "", "mitigation": ""}],
		"verification": ["make linkcheck"],
		"scope": {"allowed_paths": [" docs/** ", "README.md"], "forbidden_paths": [".git/**"]},
		"references": ["README.md"]
	}`
	want := Body{
		Title:   "Docs cleanup",
		Summary: "Reword the intro.\n\nFix links.",
		Steps: []Step{
			{ID: "1", Text: "Reword the README introduction", Status: StepPending, AcceptanceCriteria: []string{"under 100 words"}},
			{ID: "2", Text: "Fix broken links", Status: StepPending},
		},
		Assumptions:  []string{"docs are markdown"},
		Risks:        []Risk{{Risk: "links break", Mitigation: "run the checker"}},
		Verification: Words("make linkcheck"),
		Scope:        Scope{AllowedPaths: []string{"docs/**", "README.md"}, ForbiddenPaths: []string{".git/**"}},
		References:   []string{"README.md"},
	}
	got, err := ParseProposal(json.RawMessage(full))
	if err != nil {
		t.Fatalf("ParseProposal(full): %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseProposal(full)\n got %#v\nwant %#v", got, want)
	}

	minimal, err := ParseProposal(json.RawMessage(`{"title":"T","plan":[{"step":"a"},{"step":"b"},{"step":"c"}]}`))
	if err != nil {
		t.Fatalf("ParseProposal(minimal): %v", err)
	}
	for i, s := range minimal.Steps {
		if s.ID != strconv.Itoa(i+1) || s.Status != StepPending {
			t.Errorf("step %d = %+v, want id %d and status pending", i, s, i+1)
		}
	}
	if minimal.Scope.AllowedPaths != nil || minimal.Risks != nil {
		t.Errorf("absent lists should stay nil: %+v", minimal)
	}

	// Content problems are the judge's: an empty step text is kept so Judge can name it.
	kept, err := ParseProposal(json.RawMessage(`{"title":"","plan":[{"step":"  "}]}`))
	if err != nil || len(kept.Steps) != 1 || kept.Steps[0].Text != "" {
		t.Errorf("empty step text: got %+v, %v; want one empty step and no error", kept, err)
	}

	bad := []struct {
		name string
		args string
		want []string
	}{
		{"empty", ``, []string{"empty"}},
		{"null", `null`, []string{"must be a JSON object", "null"}},
		{"array", `[{"title":"x"}]`, []string{"must be a JSON object", "an array"}},
		{"string", `"plan"`, []string{"must be a JSON object", "a string"}},
		{"invalid json", `{"title": "x",`, []string{"not valid JSON"}},
		{"trailing data", `{"title":"x"} {"title":"y"}`, []string{"not valid JSON"}},
		{"steps instead of plan", `{"title":"x","steps":[{"step":"a"}]}`, []string{`unknown field "steps"`, `did you mean "plan"?`, "allowed: title, summary, plan"}},
		{"two unknown fields", `{"title":"x","plan":[{"step":"a"}],"owner":"me","priority":1}`, []string{`unknown field "owner"`, `unknown field "priority"`}},
		{"text in a step", `{"title":"x","plan":[{"step":"a"},{"text":"b"}]}`, []string{`unknown field "text" in plan[1]`, `did you mean "step"?`}},
		{"status in a step", `{"title":"x","plan":[{"step":"a","status":"pending"}]}`, []string{`unknown field "status" in plan[0]`, "allowed: step, acceptance_criteria"}},
		{"risk field", `{"title":"x","plan":[{"step":"a"}],"risks":[{"risk":"r","severity":"high"}]}`, []string{`unknown field "severity" in risks[0]`}},
		{"scope field", `{"title":"x","plan":[{"step":"a"}],"scope":{"paths":["a"]}}`, []string{`unknown field "paths" in scope`, `did you mean "allowed_paths"?`}},
		{"title a number", `{"title":5,"plan":[{"step":"a"}]}`, []string{`field "title" must be a string, not a number`}},
		{"title a boolean", `{"title":true,"plan":[{"step":"a"}]}`, []string{`field "title" must be a string, not a boolean`}},
		{"a boolean", `true`, []string{"must be a JSON object, not a boolean"}},
		{"a number", `42`, []string{"must be a JSON object, not a number"}},
		{"plan an object", `{"title":"x","plan":{"step":"a"}}`, []string{`field "plan" must be an array, not an object`}},
		{"step a number", `{"title":"x","plan":[{"step":1}]}`, []string{`field "plan.step" must be a string, not a number`}},
		{"criteria a string", `{"title":"x","plan":[{"step":"a","acceptance_criteria":"done"}]}`, []string{`"plan.acceptance_criteria" must be an array, not a string`}},
		{"scope a list", `{"title":"x","plan":[{"step":"a"}],"scope":["docs"]}`, []string{`field "scope" must be an object, not an array`}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ParseProposal(json.RawMessage(tc.args))
			if err == nil {
				t.Fatalf("ParseProposal(%s) = %+v, want an error", tc.args, b)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "exit_plan_mode") {
				t.Errorf("error %q should name the tool", err)
			}
		})
	}
}

func TestParseUpdatePlan(t *testing.T) {
	got, err := ParseUpdate(json.RawMessage(`{"plan":[
		{"step":" Fix links ","status":"completed","acceptance_criteria":["a"],"verified_criteria":[" a ",""]},
		{"step":"Write docs","status":" in_progress "}],
		"merge":true,"explanation":" moving on "}`))
	if err != nil {
		t.Fatalf("ParseUpdate: %v", err)
	}
	want := UpdateArgs{
		Plan: []StepUpdate{
			{Step: "Fix links", Status: StepCompleted, AcceptanceCriteria: []string{"a"}, VerifiedCriteria: []string{"a"}},
			{Step: "Write docs", Status: StepInProgress},
		},
		Merge:       true,
		Explanation: "moving on",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseUpdate\n got %#v\nwant %#v", got, want)
	}

	bad := []struct {
		name string
		args string
		want []string
	}{
		{"empty object", `{}`, []string{"at least one step"}},
		{"empty plan", `{"plan":[]}`, []string{"at least one step"}},
		{"invalid status", `{"plan":[{"step":"a","status":"done"}]}`, []string{`plan[0] has status "done"`, `"pending", "in_progress", "completed", "cancelled"`}},
		{"missing status", `{"plan":[{"step":"a","status":"pending"},{"step":"b"}]}`, []string{"plan[1] has no status", `"in_progress"`}},
		{"two bad statuses", `{"plan":[{"step":"a","status":"x"},{"step":"b","status":"y"}]}`, []string{`"x"`, `"y"`}},
		{"unknown top field", `{"plan":[{"step":"a","status":"pending"}],"reason":"x"}`, []string{`unknown field "reason"`, "allowed: plan, merge, explanation"}},
		{"unknown step field", `{"plan":[{"step":"a","status":"pending","id":"1"}]}`, []string{`unknown field "id" in plan[0]`}},
		{"criteria hint", `{"plan":[{"step":"a","status":"pending","verified":["x"]}]}`, []string{`did you mean "verified_criteria"?`}},
		{"merge a string", `{"plan":[{"step":"a","status":"pending"}],"merge":"yes"}`, []string{`field "merge" must be true or false, not a string`}},
		{"not an object", `[1]`, []string{"must be a JSON object"}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			u, err := ParseUpdate(json.RawMessage(tc.args))
			if err == nil {
				t.Fatalf("ParseUpdate(%s) = %+v, want an error", tc.args, u)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// planSteps builds pending steps "1".."n" with the given texts.
func planSteps(texts ...string) []Step {
	out := make([]Step, len(texts))
	for i, s := range texts {
		out[i] = Step{ID: strconv.Itoa(i + 1), Text: s, Status: StepPending}
	}
	return out
}

func withStatus(steps []Step, status ...StepStatus) []Step {
	out := CloneSteps(steps)
	for i, s := range status {
		out[i].Status = s
	}
	return out
}

func TestApplyUpdate(t *testing.T) {
	three := planSteps("Reword the README", "Fix links", "Correct spelling")
	crit := []Step{
		{ID: "1", Text: "Fix links", Status: StepInProgress, AcceptanceCriteria: []string{"linkcheck passes", "no 404s"}},
		{ID: "2", Text: "Deploy", Status: StepPending},
	}
	upd := func(merge bool, su ...StepUpdate) UpdateArgs { return UpdateArgs{Plan: su, Merge: merge} }

	cases := []struct {
		name    string
		steps   []Step
		u       UpdateArgs
		want    []Step
		wantErr []string
	}{
		{
			name:  "merge sets one status, leaves the rest",
			steps: three,
			u:     upd(true, StepUpdate{Step: "Fix links", Status: StepInProgress}),
			want:  withStatus(three, StepPending, StepInProgress),
		},
		{
			name:  "merge matches ignoring case and keeps the plan's wording",
			steps: three,
			u:     upd(true, StepUpdate{Step: "reword the readme", Status: StepCompleted}),
			want:  withStatus(three, StepCompleted),
		},
		{
			name:  "merge appends unknown steps with the next ids",
			steps: three,
			u: upd(true,
				StepUpdate{Step: "Fix links", Status: StepCompleted},
				StepUpdate{Step: "Update the changelog", Status: StepPending},
				StepUpdate{Step: "Tag a release", Status: StepInProgress}),
			want: append(withStatus(three, StepPending, StepCompleted),
				Step{ID: "4", Text: "Update the changelog", Status: StepPending},
				Step{ID: "5", Text: "Tag a release", Status: StepInProgress}),
		},
		{
			name:  "moving the in-progress marker in one update",
			steps: withStatus(three, StepInProgress),
			u: upd(true,
				StepUpdate{Step: "Reword the README", Status: StepCompleted},
				StepUpdate{Step: "Fix links", Status: StepInProgress}),
			want: withStatus(three, StepCompleted, StepInProgress),
		},
		{
			name:    "two steps in progress",
			steps:   withStatus(three, StepInProgress),
			u:       upd(true, StepUpdate{Step: "Fix links", Status: StepInProgress}),
			wantErr: []string{"at most one step may be in_progress", `"Reword the README"`, `"Fix links"`},
		},
		{
			name:  "completed needs every criterion verified",
			steps: crit,
			u:     upd(true, StepUpdate{Step: "Fix links", Status: StepCompleted, VerifiedCriteria: []string{"linkcheck passes"}}),
			wantErr: []string{`step "Fix links" cannot be completed yet`, `"no 404s"`,
				"list them in verified_criteria"},
		},
		{
			name:    "completed with nothing verified names all criteria",
			steps:   crit,
			u:       upd(true, StepUpdate{Step: "Fix links", Status: StepCompleted}),
			wantErr: []string{`"linkcheck passes", "no 404s"`},
		},
		{
			name:  "completed when all verified, matched ignoring case and spacing",
			steps: crit,
			u: upd(true, StepUpdate{Step: "Fix links", Status: StepCompleted,
				VerifiedCriteria: []string{"NO  404s", "linkcheck passes"}}),
			want: []Step{
				{ID: "1", Text: "Fix links", Status: StepCompleted, AcceptanceCriteria: []string{"linkcheck passes", "no 404s"},
					VerifiedCriteria: []string{"linkcheck passes", "no 404s"}},
				crit[1],
			},
		},
		{
			name: "previously verified criteria stay verified",
			steps: []Step{{ID: "1", Text: "Fix links", Status: StepInProgress,
				AcceptanceCriteria: []string{"linkcheck passes", "no 404s"}, VerifiedCriteria: []string{"no 404s"}}},
			u: upd(false, StepUpdate{Step: "Fix links", Status: StepCompleted, VerifiedCriteria: []string{"linkcheck passes"}}),
			want: []Step{{ID: "1", Text: "Fix links", Status: StepCompleted,
				AcceptanceCriteria: []string{"linkcheck passes", "no 404s"}, VerifiedCriteria: []string{"linkcheck passes", "no 404s"}}},
		},
		{
			name:    "verified criterion that is not a criterion",
			steps:   crit,
			u:       upd(true, StepUpdate{Step: "Fix links", Status: StepInProgress, VerifiedCriteria: []string{"tests pass"}}),
			wantErr: []string{`verified criterion "tests pass" is not one of its acceptance criteria`, `"linkcheck passes", "no 404s"`},
		},
		{
			name:    "verified criterion on a step without criteria",
			steps:   crit,
			u:       upd(true, StepUpdate{Step: "Deploy", Status: StepPending, VerifiedCriteria: []string{"deployed"}}),
			wantErr: []string{`step "Deploy" has no acceptance criteria`},
		},
		{
			name:    "criteria can be added but not dropped",
			steps:   crit,
			u:       upd(true, StepUpdate{Step: "Fix links", Status: StepCompleted, AcceptanceCriteria: []string{"anchors work"}, VerifiedCriteria: []string{"anchors work"}}),
			wantErr: []string{`"linkcheck passes", "no 404s"`},
		},
		{
			name: "adding a criterion to a completed step reopens the closure check",
			steps: []Step{{ID: "1", Text: "Fix links", Status: StepCompleted,
				AcceptanceCriteria: []string{"a"}, VerifiedCriteria: []string{"a"}}},
			u:       upd(true, StepUpdate{Step: "Fix links", Status: StepCompleted, AcceptanceCriteria: []string{"b"}}),
			wantErr: []string{`cannot be completed yet`, `"b"`},
		},
		{
			name:  "added criteria are kept in order, once",
			steps: crit,
			u:     upd(true, StepUpdate{Step: "Fix links", Status: StepInProgress, AcceptanceCriteria: []string{"No 404s", "anchors work"}}),
			want: []Step{
				{ID: "1", Text: "Fix links", Status: StepInProgress, AcceptanceCriteria: []string{"linkcheck passes", "no 404s", "anchors work"}},
				crit[1],
			},
		},
		{
			name:  "a step without criteria completes freely",
			steps: crit,
			u:     upd(true, StepUpdate{Step: "Deploy", Status: StepCompleted}),
			want:  []Step{crit[0], {ID: "2", Text: "Deploy", Status: StepCompleted}},
		},
		{
			name:  "cancelled needs no verification",
			steps: crit,
			u:     upd(true, StepUpdate{Step: "Fix links", Status: StepCancelled}),
			want:  []Step{withStatus(crit, StepCancelled)[0], crit[1]},
		},
		{
			name:  "replace keeps ids of matching steps and never reuses a dropped id",
			steps: three,
			u: upd(false,
				StepUpdate{Step: "correct spelling", Status: StepInProgress},
				StepUpdate{Step: "Add a glossary", Status: StepPending}),
			want: []Step{
				{ID: "3", Text: "correct spelling", Status: StepInProgress},
				{ID: "4", Text: "Add a glossary", Status: StepPending},
			},
		},
		{
			name: "replace keeps criteria and verification of a matched step",
			steps: []Step{{ID: "7", Text: "Fix links", Status: StepInProgress,
				AcceptanceCriteria: []string{"a", "b"}, VerifiedCriteria: []string{"a"}}},
			u: upd(false, StepUpdate{Step: "Fix links", Status: StepPending}, StepUpdate{Step: "More", Status: StepPending}),
			want: []Step{
				{ID: "7", Text: "Fix links", Status: StepPending, AcceptanceCriteria: []string{"a", "b"}, VerifiedCriteria: []string{"a"}},
				{ID: "8", Text: "More", Status: StepPending},
			},
		},
		{
			name:  "exact match wins over a case-insensitive one",
			steps: planSteps("fix links", "Fix links"),
			u:     upd(true, StepUpdate{Step: "Fix links", Status: StepCompleted}),
			want:  withStatus(planSteps("fix links", "Fix links"), StepPending, StepCompleted),
		},
		{
			name:  "non-numeric ids",
			steps: []Step{{ID: "a", Text: "x", Status: StepPending}},
			u:     upd(true, StepUpdate{Step: "y", Status: StepPending}),
			want:  []Step{{ID: "a", Text: "x", Status: StepPending}, {ID: "2", Text: "y", Status: StepPending}},
		},
		{
			name:    "empty step text",
			steps:   three,
			u:       upd(true, StepUpdate{Step: "  ", Status: StepCompleted}),
			wantErr: []string{"plan[0] has empty step text"},
		},
		{
			name:    "the same step twice",
			steps:   three,
			u:       upd(true, StepUpdate{Step: "Fix links", Status: StepCompleted}, StepUpdate{Step: "fix LINKS", Status: StepPending}),
			wantErr: []string{`plan[0] and plan[1] both name step "fix LINKS"`},
		},
		{
			name:    "invalid status",
			steps:   three,
			u:       upd(true, StepUpdate{Step: "Fix links", Status: "done"}),
			wantErr: []string{`status "done"`, `"cancelled"`},
		},
		{
			name:    "no steps",
			steps:   three,
			u:       upd(false),
			wantErr: []string{"at least one step"},
		},
		{
			name:    "too many steps",
			steps:   planSteps(manyTexts(MaxSteps)...),
			u:       upd(true, StepUpdate{Step: "one more", Status: StepPending}),
			wantErr: []string{"at most 50"},
		},
		{
			name:  "every problem is reported",
			steps: crit,
			u: upd(true,
				StepUpdate{Step: "Fix links", Status: StepCompleted},
				StepUpdate{Step: "Deploy", Status: StepInProgress, VerifiedCriteria: []string{"x"}},
				StepUpdate{Step: "New", Status: StepInProgress}),
			wantErr: []string{"cannot be completed yet", `step "Deploy" has no acceptance criteria`, "at most one step may be in_progress"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := CloneSteps(tc.steps)
			got, err := ApplyUpdate(tc.steps, tc.u)
			if !reflect.DeepEqual(tc.steps, before) {
				t.Fatalf("ApplyUpdate modified its input:\n got %+v\nwant %+v", tc.steps, before)
			}
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("ApplyUpdate = %+v, want an error", got)
				}
				if got != nil {
					t.Errorf("ApplyUpdate returned steps with an error: %+v", got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ApplyUpdate: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ApplyUpdate\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
