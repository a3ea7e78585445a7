package machine

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// Approvals under a session's policy (docs/design.md §12), recorded on the version until
// the N-th distinct approver accepts it.

// policy is the approval policy of the transition's session deciding on a version of body
// (nil: on no plan, as /plan auto does).
func (x *transition) policy(body *plan.Body) Policy {
	risk := plan.RiskLevel("")
	if body != nil {
		risk = PlanRisk(*body)
	}
	return PolicyFor(x.in.Rules.Policies, x.s.Address, risk)
}

// approve records the acceptance of x.target under the session's policy: true when it
// completes the approvals (the target carries them all), false when refused or counted.
func (x *transition) approve() (bool, error) {
	p := x.target
	pol := x.policy(&p.Body)
	a := plan.Approval{By: x.in.Requester, ByName: x.in.Name, At: x.in.Now, Version: p.Version}
	if a.By == "" {
		a.By = decidedBy(x.in.Actor)
	}
	if !pol.RequesterMayApprove && p.EditedBy != "" && a.By == p.EditedBy {
		x.refuse(fmt.Sprintf("You edited %s; another approver must accept it.", PlanLabel(p)),
			x.event(core.EventRefused, &p, "accept by the editor refused: requester_may_approve is false"))
		return false, nil
	}
	st, v := RecordApproval(ApprovalState{Version: p.Version, Approvals: p.Approvals}, a, p.Requesters, pol)
	switch v.Kind {
	case VerdictRequesterRefused:
		text := "You asked for this plan; another approver must accept it."
		if prog := ApprovalProgress(st, pol); prog != "" {
			text += fmt.Sprintf(" %s: %s.", PlanLabel(p), prog)
		}
		x.refuse(text, x.event(core.EventRefused, &p, "accept by the requester refused: requester_may_approve is false"))
		return false, nil
	case VerdictDuplicate:
		x.refuse(UpperFirst(v.Text)+".", x.event(core.EventRefused, &p, "duplicate approval"))
		return false, nil
	case VerdictCounted:
		return false, x.counted(p, st, pol, v)
	}
	x.target.Approvals = st.Approvals
	return true, nil
}

// stuck is the line a pending version's message adds when it can no longer get its
// approvals (Policy.unreachable), or "".
func (x *transition) stuck(p core.Plan) string {
	excluded := make([]string, 0, len(p.Requesters)+1)
	for _, r := range p.Requesters {
		excluded = append(excluded, r.By)
	}
	if p.EditedBy != "" {
		excluded = append(excluded, p.EditedBy)
	}
	why := x.policy(&p.Body).unreachable(x.in.Rules.Approvers, x.s.Address.Channel+":"+x.s.Owner, excluded, p.Approvals)
	if why == "" {
		return ""
	}
	return "\n" + why
}

// counted keeps the version pending with one more approval (TrigApprove: the phase and
// plan-status tables are asked again); the buttons stay where they are.
func (x *transition) counted(p core.Plan, st ApprovalState, pol Policy, v ApprovalVerdict) error {
	x.o.Trigger = TrigApprove
	if ok, err := x.check(GuardPhase); err != nil || !ok {
		return err
	}
	p.Approvals = st.Approvals
	p, err := x.settle(p, TrigApprove, "")
	if err != nil {
		return err
	}
	progress := ApprovalProgress(st, pol)
	x.next.Phase = x.phase
	x.record(x.event(core.EventApprovalRecorded, &p, progress))
	x.o.Effects = append(x.o.Effects, Effect{Kind: EffApprovals, Plan: p, Reply: core.Reply{To: x.s.Address, Kind: core.ReplyApprovals,
		Ref: p.ApprovalID, Text: cardNote(p, progress)}})
	more := v.Required - v.Count
	x.o.say(core.ReplyText, fmt.Sprintf("Approval recorded for %s: %s. It needs %d more %s before work starts.",
		PlanLabel(p), progress, more, Plural(more, "approver", "approvers")))
	return nil
}

// voidApprovals drops the partial approvals of p, which is being revised or replaced;
// it returns the words for the reply ("" when there were none).
func voidApprovals(p *core.Plan) string {
	if len(p.Approvals) == 0 {
		return ""
	}
	n, names := len(p.Approvals), approverNames(p.Approvals)
	p.Approvals = nil
	return fmt.Sprintf(" The %s it had (%s) no longer %s.", Plural(n, "approval", "approvals"), names, Plural(n, "counts", "count"))
}

// approverNames is "alice, bob": each approval's display name, else its approver's id.
func approverNames(approvals []plan.Approval) string {
	names := make([]string, len(approvals))
	for i, a := range approvals {
		names[i] = cmp.Or(a.ByName, a.By)
	}
	return strings.Join(names, ", ")
}
