package machine

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// Comments on a pending version's steps (/plan revise 2: …): recorded on the version and
// audited, shown by /plan status and the cards, and sent to the agent, tied to the steps'
// texts, by the next revise (docs/design.md §3).

// validComment checks a comment's steps against the pending version and its text
// (GuardSteps). A refusal changes nothing and says what would work.
func (x *transition) validComment() bool {
	p, steps, text := x.target, x.in.Steps, strings.TrimSpace(x.in.Text)
	n := len(p.Body.Steps)
	for _, s := range steps {
		if s < 1 || s > n {
			x.refusef("%s has %s; there is no step %d, so nothing was recorded. Comment with /plan revise N: <comment>, N from 1 to %d.",
				PlanLabel(p), countNoun(n, "step"), s, n)
			return false
		}
	}
	switch {
	case len(steps) == 0:
		return false // the engine sends only comments with steps here
	case text == "":
		x.refusef("What is your comment on %s? Nothing was recorded. /plan revise %s: <comment>", plan.StepsLabel(steps), stepList(steps))
		return false
	case len(p.Run.Comments) >= plan.MaxComments:
		x.refusef("%s already has %d comments, the most a version keeps; nothing was recorded. Send them back first: /plan revise", PlanLabel(p), plan.MaxComments)
		return false
	}
	if problems := plan.TextProblems("the comment", text); len(problems) > 0 {
		x.refusef("The comment was not recorded: %s.", strings.Join(problems, "; "))
		return false
	}
	return true
}

// comment records a comment on the pending version; the version stays pending.
func (x *transition) comment() error {
	p, in := x.target, x.in
	c := plan.Comment{ID: plan.NextCommentID(p.Run.Comments), Steps: slices.Clone(in.Steps), Text: strings.TrimSpace(in.Text),
		By: cmp.Or(in.Requester, decidedBy(in.Actor)), ByName: in.Name, At: in.Now}
	for _, s := range c.Steps {
		c.StepTexts = append(c.StepTexts, p.Body.Steps[s-1].Text)
	}
	p.Run.Comments = append(slices.Clip(p.Run.Comments), c)
	p, err := x.settle(p, TrigComment, "")
	if err != nil {
		return err
	}
	x.next.Phase = x.phase
	x.next.Requesters = Asked(x.next.Requesters, in.Requester, in.Name) // the next version answers it
	x.record(x.event(core.EventCommented, &p, fmt.Sprintf("%s on %s: %s", c.ID, plan.StepsLabel(c.Steps), c.Text)))
	waiting := len(plan.Waiting(p.Run.Comments))
	x.o.say(core.ReplyText, fmt.Sprintf("Comment %s on %s of %s recorded (%s waiting). Add more with /plan revise N: <comment>; /plan revise [feedback] sends the plan back with them.",
		c.ID, plan.StepsLabel(c.Steps), PlanLabel(p), countNoun(waiting, "comment")))
	// The version's buttons' message shows its approvals so far and the waiting comments.
	progress := ApprovalProgress(ApprovalState{Version: p.Version, Approvals: p.Approvals}, x.policy(&p.Body))
	x.o.Effects = append(x.o.Effects, Effect{Kind: EffApprovals, Plan: p, Reply: core.Reply{To: x.s.Address, Kind: core.ReplyApprovals,
		Ref: p.ApprovalID, Text: cardNote(p, progress)}})
	return nil
}

// cardNote is what the message with a pending version's buttons says of it besides the
// plan: its approvals so far (progress, "" for none) and its waiting comments.
func cardNote(p core.Plan, progress string) string {
	parts := []string{}
	if progress != "" {
		parts = append(parts, progress)
	}
	if n := len(plan.Waiting(p.Run.Comments)); n > 0 {
		parts = append(parts, countNoun(n, "comment")+" waiting for /plan revise")
	}
	return PlanLabel(p) + " — " + strings.Join(parts, " · ")
}

// sendComments marks the waiting comments of p sent, for the revise that sends them, and
// returns them.
func sendComments(p *core.Plan) []plan.Comment {
	waiting := plan.Waiting(p.Run.Comments)
	if len(waiting) == 0 {
		return nil
	}
	cs := slices.Clone(p.Run.Comments)
	for i := range cs {
		cs[i].Sent = true
	}
	p.Run.Comments = cs
	return waiting
}

// commentsForAgent is the part of a revise's decision that carries the comments, each
// tied to its steps' texts.
func commentsForAgent(cs []plan.Comment) string {
	var b strings.Builder
	b.WriteString("Comments on its steps (name those your new version answers in exit_plan_mode's answered_comments, e.g. [\"c1\"]):\n")
	for _, c := range cs {
		var on []string
		for i, s := range c.Steps {
			on = append(on, fmt.Sprintf("%d %q", s, c.StepTexts[i]))
		}
		fmt.Fprintf(&b, "- %s on %s %s (by %s): %s\n", c.ID, Plural(len(on), "step", "steps"), strings.Join(on, ", "), cmp.Or(c.ByName, c.By), c.Text)
	}
	return strings.TrimRight(b.String(), "\n")
}

// commentIDs lists the ids of cs: "c1, c2".
func commentIDs(cs []plan.Comment) string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return strings.Join(ids, ", ")
}

// sentComments are the comments of the version a proposal answers that a revise sent to
// the agent and no later version answered; nil when there is no such version.
func sentComments(prev *core.Plan) []plan.Comment {
	if prev == nil || prev.Status != core.PlanRevised {
		return nil
	}
	var out []plan.Comment
	for _, c := range prev.Run.Comments {
		if c.Sent && c.AnsweredIn == 0 {
			out = append(out, c)
		}
	}
	return out
}

// answerComments records on the version the proposal answers which of its sent comments
// the new version (numbered version) says it answered, and returns what Changes lists.
func (x *transition) answerComments(prev core.Plan, version int) []plan.CommentAnswer {
	sent := sentComments(&prev)
	if len(sent) == 0 {
		return nil
	}
	cs := slices.Clone(prev.Run.Comments)
	for i, c := range cs {
		if c.Sent && c.AnsweredIn == 0 && slices.Contains(x.answeredIDs, c.ID) {
			cs[i].AnsweredIn = version
		}
	}
	prev.Run.Comments = cs
	prev.UpdatedAt = x.in.Now
	x.o.Change.Plans = append(x.o.Change.Plans, prev)
	return plan.Answers(sent, x.answeredIDs)
}

// CommentsLine is /plan status's line about a pending version's waiting comments, or "".
func CommentsLine(p core.Plan) string {
	waiting := plan.Waiting(p.Run.Comments)
	if len(waiting) == 0 {
		return ""
	}
	var on []string
	for _, c := range waiting {
		on = append(on, c.ID+" on "+plan.StepsLabel(c.Steps))
	}
	return fmt.Sprintf("comments waiting: %s (%s) · /plan revise [feedback] sends them back", countNoun(len(waiting), "comment"), strings.Join(on, ", "))
}

// stepList is steps as typed: "2,4".
func stepList(steps []int) string {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = strconv.Itoa(s)
	}
	return strings.Join(parts, ",")
}

// countNoun is "1 step", "3 steps".
func countNoun(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
