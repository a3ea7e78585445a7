package plan

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// What changed between two plan versions (docs/design.md §13), for the new version's file and
// its chat message.

// rewordThreshold is the word similarity (0..1) above which a changed step counts as the
// same step reworded rather than one removed and another added.
const rewordThreshold = 0.5

// Diff is what changed from one plan version to the next. From is the older version's
// number; Compare leaves it 0 and the caller sets it.
type Diff struct {
	From     int
	Added    []string  // texts of new steps, in the new order
	Removed  []string  // texts of dropped steps, in the old order
	Reworded []Reword  // steps whose text changed
	Scope    string    // ScopeChange's words, "" when the scope is the same
	Tools    ToolDelta // MCP tools added to or removed from scope.allowed_tools
	Risk     string    // "risk low → high", "" when the level is the same
	Details  bool      // anything else changed (summary, criteria, risks, ...)
	Changed  []string  // the parts that changed when Details, named as changedParts does
	// Comments are the comments on the version before that its revise sent, each with
	// whether the new version's proposal said it answered it (Answers).
	Comments []CommentAnswer
}

// Reword is one step whose text changed.
type Reword struct {
	Old, New string
}

// ToolDelta lists tools a new version allows that the old did not, and the other way round.
type ToolDelta struct {
	Added, Removed []string
}

// Compare compares two plan bodies. Steps are paired by text (ignoring case and runs of
// spaces), then by position or else the most similar text when similar enough; what is
// left is added or removed.
func Compare(old, cur Body) Diff {
	var d Diff
	oldTaken := make([]bool, len(old.Steps))
	pair := make([]int, len(cur.Steps)) // cur index -> old index, -1 for none
	for i, s := range cur.Steps {
		pair[i] = -1
		for j, o := range old.Steps {
			if !oldTaken[j] && sameStepText(o.Text, s.Text) {
				pair[i], oldTaken[j] = j, true
				break
			}
		}
	}
	for i, s := range cur.Steps {
		if pair[i] >= 0 {
			continue
		}
		best := -1
		if i < len(old.Steps) && !oldTaken[i] && wordSimilarity(old.Steps[i].Text, s.Text) >= rewordThreshold {
			best = i // the same position wins over a closer text elsewhere
		} else {
			bestSim := 0.0
			for j, o := range old.Steps {
				if sim := wordSimilarity(o.Text, s.Text); !oldTaken[j] && sim >= rewordThreshold && sim > bestSim {
					best, bestSim = j, sim
				}
			}
		}
		if best >= 0 {
			pair[i], oldTaken[best] = best, true
			d.Reworded = append(d.Reworded, Reword{Old: old.Steps[best].Text, New: s.Text})
		} else {
			d.Added = append(d.Added, s.Text)
		}
	}
	for j, o := range old.Steps {
		if !oldTaken[j] {
			d.Removed = append(d.Removed, o.Text)
		}
	}
	d.Scope = ScopeChange(old.Scope, cur.Scope)
	d.Tools = ToolDelta{Added: missing(cur.Scope.AllowedTools, old.Scope.AllowedTools), Removed: missing(old.Scope.AllowedTools, cur.Scope.AllowedTools)}
	if old.Risk != cur.Risk {
		d.Risk = fmt.Sprintf("risk %s → %s", riskWords(old.Risk), riskWords(cur.Risk))
	}
	if d.Details = detailsChanged(old, cur, pair); d.Details {
		d.Changed = changedParts(old, cur)
	}
	return d
}

// detailsChanged reports changes the step and scope lists do not show: the other fields,
// and the criteria and status of paired steps.
func detailsChanged(old, cur Body, pair []int) bool {
	for i, j := range pair {
		if j < 0 {
			continue
		}
		o, s := old.Steps[j], cur.Steps[i]
		if o.Status != s.Status || !reflect.DeepEqual(o.AcceptanceCriteria, s.AcceptanceCriteria) ||
			!reflect.DeepEqual(o.VerifiedCriteria, s.VerifiedCriteria) || (sameStepText(o.Text, s.Text) && o.Text != s.Text) {
			return true
		}
	}
	o, c := old, cur
	o.Steps, c.Steps, o.Scope, c.Scope = nil, nil, budgetOnly(o.Scope), budgetOnly(c.Scope)
	o.Risk, c.Risk = "", "" // Diff.Risk says it
	return !reflect.DeepEqual(o, c)
}

// Empty reports whether the versions carry the same plan.
func (d Diff) Empty() bool {
	return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Reworded) == 0 && d.Scope == "" &&
		len(d.Tools.Added) == 0 && len(d.Tools.Removed) == 0 && d.Risk == "" && !d.Details && len(d.Comments) == 0
}

// parts lists the changes for the chat line, in the order the person reads them.
func (d Diff) parts() []string {
	var parts []string
	for _, s := range d.Added {
		parts = append(parts, "+ "+s)
	}
	for _, r := range d.Reworded {
		parts = append(parts, "~ "+r.New)
	}
	for _, s := range d.Removed {
		parts = append(parts, "− "+s)
	}
	if d.Scope != "" {
		parts = append(parts, d.Scope)
	}
	if d.Risk != "" {
		parts = append(parts, d.Risk)
	}
	if len(d.Tools.Added) > 0 {
		parts = append(parts, "tools added: "+strings.Join(d.Tools.Added, ", "))
	}
	if len(d.Tools.Removed) > 0 {
		parts = append(parts, "tools removed: "+strings.Join(d.Tools.Removed, ", "))
	}
	return parts
}

func answeredWord(answered bool) string {
	if answered {
		return "answered"
	}
	return "not answered"
}

// Summary is the one-line chat message, "Changes from v1: + Add X · ~ Reword Y · − Z ·
// scope widened: a → b · comment c1 on step 2 answered", or "" when nothing changed. The chat adapters escape the texts.
func (d Diff) Summary() string {
	parts := d.parts()
	switch {
	case len(parts) > 0:
	case len(d.Changed) > 0:
		parts = []string{"same steps; changed: " + strings.Join(d.Changed, ", ")}
	case d.Details:
		parts = []string{"same steps; only the wording changed"}
	case len(d.Comments) == 0:
		return ""
	}
	for _, c := range d.Comments {
		parts = append(parts, c.Words())
	}
	return fmt.Sprintf("Changes from v%d: %s", d.From, strings.Join(parts, " · "))
}

// Markdown is the "## Changes from vN" section of the plan file, escaped, or "" when
// nothing changed.
func (d Diff) Markdown() string {
	if d.Empty() {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Changes from v%d\n\n", d.From)
	for _, s := range d.Added {
		fmt.Fprintf(&b, "- Added: %s\n", EscapeMarkdown(s))
	}
	for _, r := range d.Reworded {
		fmt.Fprintf(&b, "- Reworded: %s → %s\n", EscapeMarkdown(r.Old), EscapeMarkdown(r.New))
	}
	for _, s := range d.Removed {
		fmt.Fprintf(&b, "- Removed: %s\n", EscapeMarkdown(s))
	}
	if d.Scope != "" {
		fmt.Fprintf(&b, "- %s\n", escapeMarkdownLine(upperFirst(d.Scope)))
	}
	if d.Risk != "" {
		fmt.Fprintf(&b, "- %s\n", EscapeMarkdown(upperFirst(d.Risk)))
	}
	for _, t := range d.Tools.Added {
		fmt.Fprintf(&b, "- Tool allowed: %s\n", EscapeMarkdown(t))
	}
	for _, t := range d.Tools.Removed {
		fmt.Fprintf(&b, "- Tool no longer allowed: %s\n", EscapeMarkdown(t))
	}
	switch {
	case len(d.Changed) > 0:
		fmt.Fprintf(&b, "- Changed: %s\n", EscapeMarkdown(strings.Join(d.Changed, ", ")))
	case d.Details:
		b.WriteString("- Only the wording changed\n")
	}
	for _, c := range d.Comments {
		fmt.Fprintf(&b, "- Comment %s on %s (%s): %s\n", c.ID, StepsLabel(c.Steps), answeredWord(c.Answered), EscapeMarkdown(c.Text))
	}
	return b.String()
}

// sameStepText compares step texts as update_plan matches them: case and runs of white
// space do not count.
func sameStepText(a, b string) bool {
	return strings.EqualFold(strings.Join(strings.Fields(a), " "), strings.Join(strings.Fields(b), " "))
}

// wordSimilarity is the Dice coefficient of the two texts' lower-case word multisets.
func wordSimilarity(a, b string) float64 {
	wa, wb := strings.Fields(strings.ToLower(a)), strings.Fields(strings.ToLower(b))
	if len(wa)+len(wb) == 0 {
		return 1
	}
	count := map[string]int{}
	for _, w := range wa {
		count[w]++
	}
	common := 0
	for _, w := range wb {
		if count[w] > 0 {
			count[w]--
			common++
		}
	}
	return 2 * float64(common) / float64(len(wa)+len(wb))
}

// missing lists the entries of a that b lacks.
func missing(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// changedParts names the parts of a plan body other than steps and scope that differ.
func changedParts(old, cur Body) []string {
	var out []string
	add := func(name string, changed bool) {
		if changed {
			out = append(out, name)
		}
	}
	add("title", old.Title != cur.Title)
	add("summary", old.Summary != cur.Summary)
	criteria := len(old.Steps) != len(cur.Steps)
	for i := 0; !criteria && i < len(old.Steps); i++ {
		criteria = !slices.Equal(old.Steps[i].AcceptanceCriteria, cur.Steps[i].AcceptanceCriteria)
	}
	add("acceptance criteria", criteria)
	add("step order", !criteria && !sameStepOrder(old.Steps, cur.Steps))
	add("expected outcome", old.ExpectedOutcome != cur.ExpectedOutcome)
	add("non-goals", !slices.Equal(old.NonGoals, cur.NonGoals))
	add("assumptions", !slices.Equal(old.Assumptions, cur.Assumptions))
	add("risks", !slices.Equal(old.Risks, cur.Risks))
	add("verification", !slices.EqualFunc(old.Verification, cur.Verification, Check.Equal))
	add("references", !slices.Equal(old.References, cur.References))
	add("budget", old.Scope.MaxFilesChanged != cur.Scope.MaxFilesChanged || old.Scope.MaxLinesChanged != cur.Scope.MaxLinesChanged)
	return out
}

// budgetOnly is the budget part of a scope (its paths and tools are ScopeChange's).
func budgetOnly(s Scope) Scope {
	return Scope{MaxFilesChanged: s.MaxFilesChanged, MaxLinesChanged: s.MaxLinesChanged}
}

// riskWords names a risk level in a change line; a plan without one is "not stated".
func riskWords(r RiskLevel) string {
	if r == "" {
		return "not stated"
	}
	return string(r)
}

func sameStepOrder(old, cur []Step) bool {
	for i := range old {
		if i >= len(cur) || old[i].Text != cur[i].Text {
			return false
		}
	}
	return true
}

// upperFirst capitalizes the first letter of an ASCII sentence.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
