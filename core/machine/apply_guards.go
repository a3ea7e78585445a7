package machine

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// check runs one guard of the table; false means it refused (or dropped) the transition.
// Guards that parse something keep the result for the transition.
func (x *transition) check(g Guard) (bool, error) {
	in, s := x.in, x.s
	switch g {
	case GuardPlanMode:
		if !in.Rules.PlanMode {
			if isAgentTrigger(x.o.Trigger) {
				x.refuse("plan mode is disabled in this gateway")
			} else {
				x.refuse("Plan mode is disabled in this gateway's configuration (plan_mode.enabled: false).")
			}
		}
		return in.Rules.PlanMode, nil
	case GuardPhase:
		to, ok := x.m.Next(s.Phase, x.o.Trigger)
		if !ok {
			x.refusePhaseFor(x.o.Trigger)
		}
		x.phase = to
		return ok, nil
	case GuardButton:
		if in.ApprovalID != "" && in.ApprovalID != s.ApprovalID {
			x.stale()
			return false, nil
		}
		return true, nil
	case GuardPending:
		return x.pending()
	case GuardFeedback:
		ok := strings.TrimSpace(in.Text) != "" || len(plan.Waiting(x.target.Run.Comments)) > 0
		if !ok {
			x.refuse("What should change? Reply with /plan revise <feedback>, or comment on a step first: /plan revise 2: <comment>.")
		}
		return ok, nil
	case GuardQuestion:
		return x.questionPending(), nil
	case GuardOption:
		answer, ok := matchOption(s.Question, in.Text)
		if !ok {
			x.refusef("%q is not one of the options: %s. Answer with /plan answer <number or text>.", in.Text, OptionList(s.Question.Options))
		}
		x.answerText = answer
		return ok, nil
	case GuardTimer:
		// A plan decided meanwhile is left alone, and nothing is said.
		return s.Phase == core.PhaseAwaitingApproval && s.PlanID == in.PlanID && x.cur != nil, nil
	case GuardValidPlan:
		return x.validPlan(), nil
	case GuardValidQuestion:
		return x.validQuestion(), nil
	case GuardEditedFile:
		return x.editedFile(), nil
	case GuardSteps:
		return x.validComment(), nil
	case GuardValidUpdate:
		u, err := plan.ParseUpdate(in.Args)
		if err != nil {
			x.refusef("%v", err)
		}
		x.stepUpdate = u
		return err == nil, nil
	}
	return false, fmt.Errorf("unknown guard %q", g)
}

func (x *transition) questionPending() bool {
	q := x.s.Question
	if x.in.ApprovalID != "" && (q == nil || q.ID != x.in.ApprovalID) {
		x.refuse("That question was already answered or replaced; nothing changed. /plan status shows what is waiting.")
		return false
	}
	if q == nil {
		x.refusef("There is no question waiting for an answer (phase: %s).", x.s.Phase)
		return false
	}
	return true
}

func (x *transition) validPlan() bool {
	body, err := plan.ParseProposal(x.in.Args)
	if err == nil {
		x.answeredIDs, err = plan.ParseAnswered(x.in.Args)
	}
	if err != nil {
		x.refusef("%v", err)
		return false
	}
	// The spec, when one is sent, is judged with the rest: one list of every problem.
	err = errors.Join(plan.Judge(body), plan.JudgeSpec(body), plan.JudgeAnswered(x.answeredIDs, sentComments(x.cur)))
	problems := CommandProblems(body, x.in.Rules)
	if err == nil { // a plan the judge passed is short enough to quote back
		problems = append(problems, Widens(body, x.in.Rules.Boundary)...)
	}
	if len(problems) > 0 {
		err = errors.Join(err, plan.Problems(problems))
	}
	if err != nil {
		x.refusef("the plan was not posted; fix these problems and call exit_plan_mode again:\n%v", err)
		return false
	}
	x.body = plan.Inherit(body, x.in.Rules.Boundary)
	return true
}

// refusePhaseFor is the refusal of the phase table for trigger t, in words that say
// what would work instead.
func (x *transition) refusePhaseFor(t Trigger) {
	ph := x.s.Phase
	switch t {
	case TrigOn:
		x.refusef("Plan mode is already on (phase: %s). /plan status shows where things stand; /plan off leaves plan mode.", ph)
	case TrigOff:
		x.refuse("Plan mode is already off. /plan on <goal> starts a plan.")
	case TrigEnter:
		x.refusef("Already in plan mode (phase: %s).", ph)
		x.o.Refusal.Benign = true
	case TrigPropose, TrigAutoPropose:
		if ph == core.PhaseExecuting {
			x.refuse("a plan is already accepted and being carried out; report progress with update_plan. Only the user can send it back (/plan revise)")
		} else {
			x.refuse("plan mode is off; call enter_plan_mode first, investigate, then propose a plan")
		}
	case TrigAsk:
		x.refusef("ask_user_question is not available in phase %s; ask in your reply instead", ph)
	case TrigUpdate, TrigComplete:
		switch ph {
		case core.PhasePlanning:
			x.refuse(notedDrafts)
			x.o.Refusal.Benign = true
		case core.PhaseAwaitingApproval:
			x.refuse("the plan is waiting for the user's decision; wait for [PLAN_DECISION] before reporting progress")
		default:
			x.refusef("there is no accepted plan to update (phase: %s)", ph)
		}
	case TrigExpire:
		// a timer is never refused: it finds nothing to do
	default:
		what := map[Trigger]string{TrigAccept: "accept", TrigApprove: "accept", TrigRevise: "revise", TrigAnswer: "answer", TrigEdit: "edit", TrigComment: "comment on"}[t]
		x.refusePhase(cmp.Or(what, "auto-approve"))
	}
}

const notedDrafts = "Noted. While planning, steps are drafts: they become the plan when you call exit_plan_mode."
