package engine

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
	"github.com/plangate/plangate/core/plan/plantest"
)

// TestPlanJSONRoundTrip is the property for PLAN.json: for random plans (the generator of
// the plan file's property test, full of text to escape), the document reads back into
// the same body: steps, scope, lists and spec, text unescaped.
func TestPlanJSONRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 14))
	s := core.Session{ID: "terminal:local:main"}
	for i := range 1000 {
		b := plantest.Body(r)
		data, err := RenderPlanJSON(s, core.Plan{ID: "p1", Version: 1, Status: core.PlanAccepted, Body: b})
		if err != nil {
			t.Fatal(err)
		}
		var d PlanDocument
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("plan %d: %v\n%s", i, err, data)
		}
		got := plan.Body{Title: d.Title, Summary: d.Summary, Assumptions: d.Assumptions, Risks: d.Risks,
			Verification: d.Verification, References: d.References, Spec: d.Spec,
			Scope: plan.Scope{AllowedPaths: d.Scope.AllowedPaths, ForbiddenPaths: d.Scope.ForbiddenPaths, AllowedTools: d.Scope.AllowedTools}}
		for _, st := range d.Steps {
			got.Steps = append(got.Steps, plan.Step{ID: st.ID, Text: st.Text, Status: st.Status,
				AcceptanceCriteria: st.AcceptanceCriteria, VerifiedCriteria: st.VerifiedCriteria, CancelReason: st.CancelReason})
		}
		if !reflect.DeepEqual(normal(got), normal(b)) {
			t.Fatalf("plan %d does not round-trip through PLAN.json\n%s\n got %#v\nwant %#v", i, data, got, b)
		}
	}
}

// normal makes empty lists nil: PLAN.json writes [] where the body has none.
func normal(b plan.Body) plan.Body {
	nil0 := func(l []string) []string {
		if len(l) == 0 {
			return nil
		}
		return l
	}
	b.Assumptions, b.References = nil0(b.Assumptions), nil0(b.References)
	if len(b.Verification) == 0 {
		b.Verification = nil
	}
	b.Scope = plan.Scope{AllowedPaths: nil0(b.Scope.AllowedPaths), ForbiddenPaths: nil0(b.Scope.ForbiddenPaths), AllowedTools: nil0(b.Scope.AllowedTools)}
	if len(b.Risks) == 0 {
		b.Risks = nil
	}
	for i := range b.Steps {
		b.Steps[i].AcceptanceCriteria, b.Steps[i].VerifiedCriteria = nil0(b.Steps[i].AcceptanceCriteria), nil0(b.Steps[i].VerifiedCriteria)
	}
	return b
}
