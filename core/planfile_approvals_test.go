package core

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core/plan"
)

// TestPlanFileListsApprovals: the file names who approved under an N-of-M policy — the
// approvals so far while the version is pending, all of them once it is accepted — and
// an edited file with that section reads back as the same plan.
func TestPlanFileListsApprovals(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 5, 0, 0, time.UTC)
	bob := plan.Approval{By: "terminal:bob", ByName: "Bob", At: at, Version: 1}
	carol := plan.Approval{By: "terminal:carol", ByName: "<b>@everyone</b>", At: at.Add(time.Minute), Version: 1}

	pending := minimalPlan()
	pending.Approvals = []plan.Approval{bob}
	got := string(RenderPlanMarkdown(pending, PhaseAwaitingApproval, "main", Reach{}))
	if !strings.Contains(got, "\n## Approvals\n\n- Bob (terminal:bob) at 2026-11-30 09:05 UTC\n") {
		t.Errorf("a pending version with one approval should list it:\n%s", got)
	}
	back, err := plan.ParseMarkdown([]byte(got))
	if err != nil {
		t.Fatalf("reading the file back: %v", err)
	}
	if !reflect.DeepEqual(back, pending.Body) {
		t.Errorf("the Approvals section changed the plan read back:\n got %#v\nwant %#v", back, pending.Body)
	}

	accepted := minimalPlan()
	accepted.Status = PlanAccepted
	accepted.Approvals = []plan.Approval{bob, carol}
	accepted.Decision = &plan.Decision{By: carol.By, ByName: carol.ByName, At: carol.At, Channel: "terminal", Outcome: "accepted"}
	got = string(RenderPlanMarkdown(accepted, PhaseExecuting, "main", Reach{}))
	for _, want := range []string{
		"- Bob (terminal:bob) at 2026-11-30 09:05 UTC\n",
		"- " + plan.EscapeMarkdown(carol.ByName) + " (terminal:carol) at 2026-11-30 09:06 UTC\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("an accepted 2-of-N version should list %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "## Approvals") > strings.Index(got, "## Decision") {
		t.Errorf("the approvals should come before the decision:\n%s", got)
	}

	single := minimalPlan()
	single.Status = PlanAccepted
	single.Approvals = []plan.Approval{bob}
	single.Decision = &plan.Decision{By: bob.By, ByName: bob.ByName, At: at, Channel: "terminal", Outcome: "accepted"}
	if got := string(RenderPlanMarkdown(single, PhaseExecuting, "main", Reach{})); strings.Contains(got, "## Approvals") {
		t.Errorf("a single approver's acceptance is the decision's By; no Approvals section:\n%s", got)
	}
}
