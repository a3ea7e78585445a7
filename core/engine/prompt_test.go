package engine

import (
	"strings"
	"testing"
)

func TestPlanModeCard(t *testing.T) {
	if got := PlanModeCard(Planner{}); got != planCard {
		t.Errorf("the zero planner changes the card:\n%s", got)
	}
	cons := PlanModeCard(Planner{Style: StyleConservative})
	amb := PlanModeCard(Planner{Style: StyleAmbitious})
	for _, tc := range []struct {
		card, want, not string
	}{
		{cons, "smallest change that meets the goal", "opportunities"},
		{cons, "no new dependencies", "product spec"},
		{amb, "name the opportunities", "smallest change"},
		{amb, "better product", "product spec first"},
	} {
		if !strings.HasPrefix(tc.card, planCard) || !strings.Contains(tc.card, tc.want) || strings.Contains(tc.card, tc.not) {
			t.Errorf("card lacks %q or has %q:\n%s", tc.want, tc.not, tc.card)
		}
	}
	exp := PlanModeCard(Planner{Style: StyleConservative, ExpandShortGoals: true})
	for _, want := range []string{"at most four sentences", `"spec"`, "priority: high|medium|low", "complexity: small|medium|large", "user_stories", "tech_stack", "design_direction", "smallest change"} {
		if !strings.Contains(exp, want) {
			t.Errorf("expanding card lacks %q:\n%s", want, exp)
		}
	}
}
