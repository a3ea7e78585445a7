package machine

import (
	"fmt"
	"strings"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// What plangate says: /plan status and /plan show, and the texts of plans, questions and
// checklists.

// StatusText is the answer to /plan status: s with its current plan cur (nil for none)
// under the session's approval policy pol, and the "next nudge" line.
func StatusText(s core.Session, cur *core.Plan, pol Policy, nudgeLine string) string {
	var p core.Plan
	ok := cur != nil
	if ok {
		p = *cur
	}
	parts := []string{"phase: " + string(s.Phase)}
	if ok {
		label := "plan"
		if s.Phase == core.PhaseOff || s.Phase == core.PhasePlanning {
			label = "last plan"
		}
		completed, cancelled, total := stepCounts(p.Body.Steps)
		progress := fmt.Sprintf("%d/%d steps done", completed, total)
		if cancelled > 0 {
			progress += fmt.Sprintf(", %d cancelled", cancelled)
		}
		parts = append(parts, fmt.Sprintf("%s: v%d %q (%s, %s)", label, p.Version, p.Body.Title, p.Status, progress))
	}
	parts = append(parts, "auto-approve: "+onOff(s.AutoApprove))
	lines := []string{strings.Join(parts, " · ")}
	if q := s.Question; q != nil {
		lines = append(lines, "question: "+q.Text+" — "+OptionList(q.Options)+" · /plan answer <number or text>")
	}
	if s.Phase == core.PhaseAwaitingApproval && ok {
		lines = append(lines, fmt.Sprintf("waiting since %s for /plan accept · /plan revise <feedback>", p.CreatedAt.UTC().Format("2006-01-02 15:04 MST")))
		if prog := ApprovalProgress(ApprovalState{Version: p.Version, Approvals: p.Approvals}, pol); prog != "" {
			if pol.Risk != "" {
				prog += ", as a " + string(pol.Risk) + "-risk plan"
			}
			lines = append(lines, "approvals: "+prog)
		}
		if line := CommentsLine(p); line != "" {
			lines = append(lines, line)
		}
	}
	if line := verificationStatus(p); ok && line != "" {
		lines = append(lines, line)
	}
	if ok && p.Status == core.PlanAccepted && p.Run.Stop != nil {
		lines = append(lines, p.Run.Stop.Lines()...)
	}
	if ok && p.Run.Undone != nil {
		u := p.Run.Undone
		lines = append(lines, fmt.Sprintf("undone: %s at %s by %s", countNoun(len(u.Files), "file"), core.Clock(u.At), undoneBy(u)))
	}
	if ok && len(p.Requesters) > 0 {
		lines = append(lines, "asked by: "+requesterNames(p.Requesters))
	}
	if ok {
		if line := budgetLine(p); line != "" {
			lines = append(lines, line)
		}
	}
	if s.RejectionCount > 0 {
		lines = append(lines, fmt.Sprintf("revisions requested: %d", s.RejectionCount))
	}
	lines = append(lines, tokenLines(s, cur)...)
	lines = append(lines, nudgeLine)
	return strings.Join(lines, "\n")
}

// stepCounts counts completed and cancelled steps: a cancelled step is finished, not done.
func stepCounts(steps []plan.Step) (completed, cancelled, total int) {
	for _, st := range steps {
		switch st.Status {
		case plan.StepCompleted:
			completed++
		case plan.StepCancelled:
			cancelled++
		}
	}
	return completed, cancelled, len(steps)
}

// progressWords is a plan's progress for the chat: "2 of 3 steps done", and how many were
// cancelled, if any ("1 of 3 steps done, 1 cancelled").
func progressWords(steps []plan.Step) string {
	completed, cancelled, total := stepCounts(steps)
	w := fmt.Sprintf("%d of %d steps done", completed, total)
	if cancelled > 0 {
		w += fmt.Sprintf(", %d cancelled", cancelled)
	}
	return w
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func OptionList(opts []string) string {
	parts := make([]string, len(opts))
	for i, o := range opts {
		parts[i] = fmt.Sprintf("%d. %s", i+1, o)
	}
	return strings.Join(parts, " · ")
}

// ShowReply is the answer to /plan show of the current plan cur (nil for none).
func ShowReply(s core.Session, cur *core.Plan) core.Reply {
	if cur == nil {
		return core.Reply{Text: "There is no plan in this conversation yet. Start one with /plan on <goal>."}
	}
	p := *cur
	r := PlanReply(s, p)
	r.Text = fmt.Sprintf("Plan v%d — %s (%s)\n%s", p.Version, p.Body.Title, p.Status, plan.Checklist(p.Body.Steps))
	if p.Status == core.PlanPending {
		r.Text += "\nDecide: /plan accept · /plan revise <feedback> · /plan auto"
	}
	return r
}

// PlanReply is the reply that carries a plan file, with decision buttons while pending.
func PlanReply(s core.Session, p core.Plan) core.Reply {
	r := core.Reply{To: s.Address, Kind: core.ReplyPlan}
	if p.File != "" {
		r.Attachments = []core.File{{Name: FileBase(p.File), MIME: "text/markdown", Path: p.File}}
	}
	if p.Status == core.PlanPending && p.ApprovalID != "" {
		r.Buttons = []core.Button{
			{Label: "Accept", Action: core.Action{Kind: core.ActionAccept, ApprovalID: p.ApprovalID}},
			{Label: "Revise", Action: core.Action{Kind: core.ActionRevise, ApprovalID: p.ApprovalID}},
			{Label: "Auto", Action: core.Action{Kind: core.ActionAuto, ApprovalID: p.ApprovalID}},
		}
		for _, st := range p.Body.Steps {
			r.Steps = append(r.Steps, st.Text)
		}
	}
	return r
}

func FileBase(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// questionReply is the reply that asks q, with one button per option.
func questionReply(to core.Address, q *core.Question) core.Reply {
	var b strings.Builder
	fmt.Fprintf(&b, "Question: %s\n", q.Text)
	r := core.Reply{To: to, Kind: core.ReplyQuestion}
	for i, o := range q.Options {
		fmt.Fprintf(&b, "%d. %s\n", i+1, o)
		r.Buttons = append(r.Buttons, core.Button{Label: o, Action: core.Action{Kind: core.ActionAnswer, ApprovalID: q.ID, Value: o}})
	}
	b.WriteString("Answer: /plan answer <number>")
	if q.AllowFreeText {
		b.WriteString(" (or your own words)")
	}
	r.Text = b.String()
	return r
}

// proposalText is a new version's chat message: what it does, every grant it asks for
// (see PlanGrants), how it differs from the version it answers, the version it supersedes
// (0: none) and who decides. An edited version's message names its editor instead of
// its spec.
func proposalText(p core.Plan, editor string, superseded int, decide string, rules Rules) string {
	var b strings.Builder
	n := len(p.Body.Steps)
	fmt.Fprintf(&b, "Plan v%d — %s (%d %s)", p.Version, p.Body.Title, n, Plural(n, "step", "steps"))
	if editor != "" {
		b.WriteString(", edited by " + editor)
	}
	if p.Body.Summary != "" {
		b.WriteString("\n" + OneLine(p.Body.Summary))
	}
	if line := IntentLine(p.Body); line != "" {
		b.WriteString("\n" + line)
	}
	if line := specLine(p.Body.Spec); line != "" && editor == "" {
		b.WriteString("\n" + line)
	}
	b.WriteString("\n" + grantLines(p.Body.Scope, rules.Reach, rules.Destructive))
	if line := checksLine(p.Body); line != "" {
		b.WriteString("\n" + line)
	}
	if p.Changes != nil {
		if line := p.Changes.Summary(); line != "" {
			b.WriteString("\n" + line)
		}
	}
	if superseded > 0 {
		fmt.Fprintf(&b, "\n(v%d is superseded.)", superseded)
	}
	b.WriteString("\n" + decide)
	return b.String()
}

// decideLine is the last line of a proposal: how it was accepted (rule: the accepting
// rule's words), or who decides (noRule: rules are configured and none covers the plan).
func decideLine(p core.Plan, autoHeld, rule string, noRule bool) string {
	switch {
	case p.Status == core.PlanAccepted && rule != "":
		return "Auto-approved by " + rule + ". Working on it."
	case p.Status == core.PlanAccepted:
		return "Auto-approved: auto-approve is on for this conversation (/plan auto off to stop). Working on it."
	case autoHeld != "":
		return fmt.Sprintf("Not auto-approved: auto-approve only takes a plan proposed in answer to a person's message, and %s. A person decides: /plan accept · /plan revise <feedback>", autoHeld)
	case noRule:
		return "No auto-approve rule covers this plan, so a person decides: /plan accept · /plan revise <feedback> · /plan auto"
	}
	return "Decide: /plan accept · /plan revise <feedback> · /plan auto"
}

// StepDiff lists added ("+ text") and removed ("− text") steps by text, as the chat's
// "Changes from vN" line and the web channel's card show them.
func StepDiff(old, cur []plan.Step) []string {
	in := func(steps []plan.Step, text string) bool {
		for _, s := range steps {
			if strings.EqualFold(strings.TrimSpace(s.Text), strings.TrimSpace(text)) {
				return true
			}
		}
		return false
	}
	var parts []string
	for _, s := range cur {
		if !in(old, s.Text) {
			parts = append(parts, "+ "+s.Text)
		}
	}
	for _, s := range old {
		if !in(cur, s.Text) {
			parts = append(parts, "− "+s.Text)
		}
	}
	return parts
}

func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// MessageText is a person's message as the agent gets it: the text and the names of its
// attachments.
func MessageText(m core.Message) string {
	text := strings.TrimSpace(m.Text)
	for _, a := range m.Attachments {
		text += fmt.Sprintf("\n[attachment: %s]", a.Name)
	}
	return strings.TrimSpace(text)
}

func OneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func UpperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// specLineFeatures is how many features a proposal's chat message names; the plan file
// has them all.
const specLineFeatures = 5

// specLine is a proposal's line about its product spec: how many features, the first
// few with their priority and complexity, e.g. "Product spec: 2 features — Add a todo
// (high, small) · Due dates (low, medium)". "" without a spec.
func specLine(sp *plan.ProductSpec) string {
	if sp == nil {
		return ""
	}
	n := len(sp.Features)
	var b strings.Builder
	fmt.Fprintf(&b, "Product spec: %d %s", n, Plural(n, "feature", "features"))
	for i, f := range sp.Features[:min(n, specLineFeatures)] {
		sep := " · "
		if i == 0 {
			sep = " — "
		}
		fmt.Fprintf(&b, "%s%s (%s, %s)", sep, OneLine(f.Name), f.Priority, f.Complexity)
	}
	if n > specLineFeatures {
		b.WriteString(" · …")
	}
	return b.String()
}

// IntentLine is the proposal's line of intent, "Risk: high · Outcome: … · Not doing: a, b",
// or "" when the plan states none of them.
func IntentLine(b plan.Body) string {
	var parts []string
	if b.Risk != "" {
		parts = append(parts, "Risk: "+string(b.Risk))
	}
	if b.ExpectedOutcome != "" {
		parts = append(parts, "Outcome: "+OneLine(b.ExpectedOutcome))
	}
	if len(b.NonGoals) > 0 {
		parts = append(parts, "Not doing: "+OneLine(strings.Join(b.NonGoals, ", ")))
	}
	return strings.Join(parts, " · ")
}

// tokenLines are /plan status's counts of model tokens, on one line: the plan shown (its
// planning and execution), the planning of the next version so far, and the conversation
// in all.
func tokenLines(s core.Session, cur *core.Plan) []string {
	if all := s.Tokens.All; all.Calls > 0 && all.Unreported >= all.Calls {
		return []string{"tokens: not reported by the model"} // the script provider, a server without usage
	}
	var parts []string
	if cur != nil && cur.Tokens.Calls > 0 {
		label := "this plan"
		if s.Phase == core.PhaseOff || s.Phase == core.PhasePlanning {
			label = "last plan"
		}
		parts = append(parts, label+": "+cur.Tokens.Words())
	}
	if s.Phase == core.PhasePlanning && s.Tokens.Planning.Calls > 0 {
		parts = append(parts, "planning so far: "+s.Tokens.Planning.Words())
	}
	if s.Tokens.All.Calls > 0 {
		parts = append(parts, "this conversation: "+s.Tokens.All.Words())
	}
	if len(parts) == 0 {
		return nil
	}
	return []string{strings.Join(parts, " · ")}
}
