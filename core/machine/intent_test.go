package machine

import (
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// The proposal's chat message shows the plan's intent on one line, and nothing when the
// plan states none.
func TestProposalTextIntent(t *testing.T) {
	p := core.Plan{Version: 1, Body: plan.Body{Title: "T", Steps: []plan.Step{{ID: "1", Text: "a"}},
		Risk: plan.RiskHigh, ExpectedOutcome: "the docs\nbuild", NonGoals: []string{"no API change", "no vendoring"}}}
	got := proposalText(p, "", 0, "Decide: /plan accept", Rules{})
	if want := "\nRisk: high · Outcome: the docs build · Not doing: no API change, no vendoring\n"; !strings.Contains(got, want) {
		t.Fatalf("text lacks %q:\n%s", want, got)
	}
	p.Body.Risk, p.Body.ExpectedOutcome, p.Body.NonGoals = "", "", nil
	if got := proposalText(p, "", 0, "Decide: /plan accept", Rules{}); strings.Contains(got, "Risk") || strings.Contains(got, "Not doing") {
		t.Fatalf("a plan without intent shows it:\n%s", got)
	}
}
