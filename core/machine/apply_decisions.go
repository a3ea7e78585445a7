package machine

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// The decisions of Apply: a person (or a rule, or the clock) decides on a plan version
// or answers a question.

func (x *transition) accept() error {
	stale, ok := x.fresh()
	if !ok {
		return nil // refused: the workspace changed since the version was proposed
	}
	if done, err := x.approve(); err != nil || !done {
		return err // refused, or counted and still waiting for more approvers
	}
	if x.o.Trigger != TrigAccept {
		// The N-th approval: the phase table decides as for any acceptance.
		x.o.Trigger = TrigAccept
		if ok, err := x.check(GuardPhase); err != nil || !ok {
			return err
		}
	}
	how, detail := "accepted "+x.by(), ""
	if stale != "" {
		how, detail = "accepted --stale "+x.by(), "stale: "+stale
	}
	p, err := x.decide(x.target, TrigAccept, "accepted", "", how)
	if err != nil {
		return err
	}
	if stale != "" {
		// The decision says what had changed; the execution counts from what was accepted.
		p.Decision.Stale = stale
		if x.in.Tree != nil {
			p.Run.Baseline = x.in.Tree
		}
		x.o.Change.Plans[len(x.o.Change.Plans)-1] = p
	}
	x.next.Phase = x.phase
	x.next.ApprovalID = ""
	inj := approvedInjection(p, "approved by "+x.in.who())
	if stale != "" {
		inj.Text += "\nThe workspace changed since this plan was proposed (" + stale + "); read what changed again before relying on it."
	}
	x.next.Injections = append(x.next.Injections, inj)
	x.record(x.event(core.EventAccepted, &p, detail))
	x.o.Change.CancelNudges = true
	with := ""
	if pol := x.policy(&p.Body); pol.needed() > 1 {
		with = " with " + ApprovalProgress(ApprovalState{Version: p.Version, Approvals: p.Approvals}, pol)
	}
	if stale != "" {
		with += " on a changed workspace (" + stale + " since it was proposed)"
	}
	x.o.say(core.ReplyText, fmt.Sprintf("Accepted plan v%d %q%s. Working on it.", p.Version, p.Body.Title, with))
	return nil
}

func approvedInjection(p core.Plan, how string) core.Injection {
	var b strings.Builder
	fmt.Fprintf(&b, "[PLAN_DECISION]: approved (%s)\nPlan v%d %q is accepted. Carry it out step by step; mark progress with update_plan (a step is completed only when its acceptance criteria are verified).\nSteps:\n", how, p.Version, p.Body.Title)
	for _, st := range p.Body.Steps {
		fmt.Fprintf(&b, "%s. %s\n", st.ID, st.Text)
		for _, c := range st.AcceptanceCriteria {
			fmt.Fprintf(&b, "   - criterion: %s\n", c)
		}
	}
	if cmds := plan.Commands(p.Body.Verification); len(cmds) > 0 {
		b.WriteString("When you finish the last step, plangate runs these checks in the workspace; the plan is completed only if each exits 0:\n")
		for _, c := range cmds {
			fmt.Fprintf(&b, "- %s\n", plan.DisplayArgv(c.Argv))
		}
	}
	return core.Injection{Kind: core.InjectDecision, Text: strings.TrimRight(b.String(), "\n")}
}

func (x *transition) revise() error {
	feedback := x.in.Text
	target := x.target
	void := voidApprovals(&target)
	comments := sendComments(&target)
	said := feedback // what the decision and the audit row keep
	if strings.TrimSpace(feedback) == "" {
		said = "comments " + commentIDs(comments)
	}
	p, err := x.decide(target, TrigRevise, "revised", said, "sent back for revision "+x.by())
	if err != nil {
		return err
	}
	n := &x.next
	n.Phase = x.phase
	n.ApprovalID = ""
	n.RejectionCount++
	n.LastFeedback = said
	n.Requesters = Asked(n.Requesters, x.in.Requester, x.in.Name) // the next version answers the feedback
	n.Question = nil
	// An approval that never reached the agent (its turn was interrupted) is void now.
	n.Injections = withoutKind(n.Injections, core.InjectDecision)
	text := fmt.Sprintf("[PLAN_DECISION]: rejected\nPlan v%d %q was sent back by %s", p.Version, p.Body.Title, x.in.who())
	if said == feedback {
		text += " with this feedback:\n" + feedback
	} else {
		text += "."
	}
	if len(comments) > 0 {
		text += "\n" + commentsForAgent(comments)
	}
	text += "\nRevise the plan and propose it again with exit_plan_mode."
	if n.RejectionCount >= 3 {
		text += fmt.Sprintf("\nThis is rejection number %d. Before proposing again, ask the user a clarifying question with ask_user_question.", n.RejectionCount)
	}
	n.Injections = append(n.Injections, core.Injection{Kind: core.InjectDecision, Text: text})
	x.record(x.event(core.EventRevised, &p, said))
	x.o.Change.CancelNudges = true
	with := ""
	if len(comments) > 0 {
		with = " with " + countNoun(len(comments), "comment") + " (" + commentIDs(comments) + ")"
	}
	x.o.say(core.ReplyText, fmt.Sprintf("Sent plan v%d back for revision (%s time)%s. I'll propose a new version.%s", p.Version, ordinal(n.RejectionCount), with, void))
	return nil
}

func (x *transition) answer() error {
	q, answer := x.s.Question, x.answerText
	x.next.Phase = x.phase
	x.next.Question = nil
	x.next.Requesters = Asked(x.next.Requesters, x.in.Requester, x.in.Name) // the plan follows the answer
	x.next.Injections = append(x.next.Injections, core.Injection{Kind: core.InjectAnswer,
		Text: fmt.Sprintf("[QUESTION_ANSWER]: %s\nQuestion: %s\nAnswered by %s.", answer, q.Text, x.in.who())})
	x.record(x.event(core.EventAnswered, nil, answer))
	if err := x.answered(); err != nil {
		return err
	}
	x.o.Change.CancelReminders = true
	x.o.say(core.ReplyText, "Answer recorded: "+answer)
	return nil
}

func (x *transition) auto(on bool) error {
	to := x.phase
	if on {
		pol, label := x.policy(nil), ""
		if x.s.Phase == core.PhaseAwaitingApproval && x.cur != nil && !pol.strict() {
			pol, label = x.policy(&x.cur.Body), fmt.Sprintf("plan v%d %q", x.cur.Version, x.cur.Body.Title)
		}
		if pol.strict() {
			x.refuse(pol.noAuto(label))
			return nil
		}
	}
	if x.s.AutoApprove == on && to == x.s.Phase {
		x.refusef("Auto-approve is already %s for this conversation.", onOff(on))
		return nil
	}
	x.next.AutoApprove = on
	x.next.Phase = to
	x.record(x.event(core.EventAutoChanged, nil, "auto-approve "+onOff(on)))
	text := fmt.Sprintf("Auto-approve is %s for this conversation.", onOff(on))
	if on {
		text += " New plans will be accepted as soon as they are proposed."
	}
	if to == core.PhaseExecuting && x.s.Phase == core.PhaseAwaitingApproval {
		if x.cur == nil {
			return fmt.Errorf("session %s awaits approval without a plan", x.s.ID)
		}
		p, err := x.decide(*x.cur, TrigAutoOn, "auto_accepted", "", "accepted by auto-approve, turned on "+x.by())
		if err != nil {
			return err
		}
		x.next.ApprovalID = ""
		x.next.Injections = append(x.next.Injections, approvedInjection(p, "auto-approve turned on by "+x.in.who()))
		x.record(x.event(core.EventAutoAccepted, &p, "auto-approve turned on"))
		x.o.Change.CancelNudges = true
		text += fmt.Sprintf(" Accepted the pending plan v%d %q. Working on it.", p.Version, p.Body.Title)
	}
	x.o.say(core.ReplyText, text)
	return nil
}

// expire applies plan_mode.approval_timeout to the plan the schedule was made for.
func (x *transition) expire() error {
	p, err := x.decide(*x.cur, TrigExpire, "expired", "", "expired without a decision")
	if err != nil {
		return err
	}
	x.next.Phase = x.phase
	x.next.ApprovalID = ""
	x.record(x.event(core.EventExpired, &p, "approval timeout "+x.in.Spec))
	x.o.Change.CancelNudges = true
	x.o.say(core.ReplyNotice, fmt.Sprintf("%s expired: no decision within %s (plan_mode.approval_timeout). Back to planning: ask me to propose it again, or /plan off.",
		PlanLabel(p), core.HumanDuration(x.in.Rules.ApprovalTimeout)))
	return nil
}

func withoutKind(in []core.Injection, k core.InjectionKind) []core.Injection {
	var out []core.Injection
	for _, i := range in {
		if i.Kind != k {
			out = append(out, i)
		}
	}
	return out
}

// onlyKind is the injections of in of kind k.
func onlyKind(in []core.Injection, k core.InjectionKind) []core.Injection {
	var out []core.Injection
	for _, i := range in {
		if i.Kind == k {
			out = append(out, i)
		}
	}
	return out
}

// matchOption resolves an answer: an option number, an option's text (case-insensitive),
// or free text when the question allows it.
func matchOption(q *core.Question, text string) (string, bool) {
	text = strings.TrimSpace(text)
	if n, err := strconv.Atoi(text); err == nil && n >= 1 && n <= len(q.Options) {
		return q.Options[n-1], true
	}
	for _, o := range q.Options {
		if strings.EqualFold(o, text) {
			return o, true
		}
	}
	if q.AllowFreeText && text != "" {
		return text, true
	}
	return "", false
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}
