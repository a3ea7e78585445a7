package engine_test

import (
	"encoding/json"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/plan"
)

// PLAN.json carries the plan's intent; a plan that states none has an empty risk and an
// empty non-goals list, never a missing field.
func TestPlanJSONIntent(t *testing.T) {
	s := core.Session{ID: "s1"}
	body := plan.Body{Title: "T", Steps: []plan.Step{{ID: "1", Text: "a", Status: plan.StepPending}},
		Risk: plan.RiskHigh, NonGoals: []string{"no API change"}, ExpectedOutcome: "the docs build"}
	for _, tc := range []struct {
		body plan.Body
		want map[string]any
	}{
		{body, map[string]any{"risk": "high", "non_goals": []any{"no API change"}, "expected_outcome": "the docs build"}},
		{plan.Body{Title: "T", Steps: body.Steps}, map[string]any{"risk": "", "non_goals": []any{}, "expected_outcome": ""}},
	} {
		data, err := engine.RenderPlanJSON(s, core.Plan{ID: "p1", Version: 1, Body: tc.body})
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		for k, want := range tc.want {
			got, _ := json.Marshal(doc[k])
			w, _ := json.Marshal(want)
			if _, ok := doc[k]; !ok || string(got) != string(w) {
				t.Errorf("%s = %s, want %s", k, got, w)
			}
		}
	}
}
