package machine

import (
	"fmt"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// Plans bound to the workspace they were made on (docs/design.md §13): a version records
// the workspace's fingerprint when it is proposed, and an acceptance is checked against it.

// staleNames is how many changed files a refusal names before "and N more".
const staleNames = 3

// fresh checks the workspace against the fingerprint x.target was proposed on. A changed
// workspace refuses the acceptance (an audited refusal, nothing else changes) unless the
// approver wrote /plan accept --stale; then stale names what changed, for the decision and
// its audit row. A version without a fingerprint (none was kept) is not checked.
func (x *transition) fresh() (stale string, ok bool) {
	p, in := x.target, x.in
	if p.Run.Tree == nil {
		return "", true
	}
	if in.TreeProblem != "" {
		if in.Stale {
			return "not checked (" + in.TreeProblem + ")", true
		}
		x.refuse(fmt.Sprintf("%s was not accepted: I could not compare the workspace with the one it was proposed on (%s), so nothing changed. /plan accept --stale accepts it without the check.",
			PlanLabel(p), in.TreeProblem),
			x.event(core.EventRefused, &p, "accept refused: workspace not checked: "+in.TreeProblem))
		return "", false
	}
	c, err := plan.CompareTrees(p.Run.Tree, in.Tree)
	if err != nil {
		c = plan.TreeChanges{Files: []plan.FileChange{{Path: "(the recorded fingerprint is unreadable)", Kind: plan.FileChanged}}}
	}
	if c.Empty() {
		return "", true
	}
	words := c.Words(staleNames)
	if in.Stale {
		return words, true
	}
	x.refuse(fmt.Sprintf("%s was not accepted: %s since v%d was proposed, so nothing changed. /plan revise <feedback> asks for a plan of the workspace as it is; /plan accept --stale accepts v%d anyway.",
		PlanLabel(p), words, p.Version, p.Version),
		x.event(core.EventRefused, &p, "accept refused: workspace changed: "+words))
	return "", false
}

// budgetLine is /plan status's line about what an accepted version changed against its
// budget ("budget: 2 of 3 files, 40 of 100 lines changed so far"); "" for a version with
// no budget, or one not carried out.
func budgetLine(p core.Plan) string {
	sc, ch := p.Body.Scope, p.Run.Changed
	if sc.BudgetWords() == "" || (p.Status != core.PlanAccepted && p.Status != core.PlanCompleted) {
		return ""
	}
	files, lines := 0, 0
	if ch != nil {
		files, lines = ch.Files, ch.Lines
	}
	line := "budget: " + plan.ChangedWords(sc, files, lines) + " so far"
	if ch != nil && ch.Exceeded != "" {
		line += fmt.Sprintf(" — over it (%s); v%d may change nothing more: /plan revise <feedback> for a new version", ch.Exceeded, p.Version)
	}
	return line
}
