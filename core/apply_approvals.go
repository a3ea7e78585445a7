package core

import (
	"fmt"
	"strings"

	"github.com/plangate/plangate/core/plan"
)

// Approvals under a session's policy (docs/design.md §12): every acceptance is recorded on the
// version; the version is accepted only with the N-th distinct approver, and the person
// who asked for it (or wrote it by editing the file) may be refused.

// policy is the approval policy of the transition's session.
func (x *transition) policy() Policy { return PolicyFor(x.in.Rules.Policies, x.s.Address) }

// approve records the acceptance of x.target under the session's policy. It returns true
// when this acceptance completes the approvals, with the target carrying them all; false
// when it was refused or counted (the outcome says which).
func (x *transition) approve() (bool, error) {
	p, pol := x.target, x.policy()
	a := plan.Approval{By: x.in.Requester, ByName: x.in.Name, At: x.in.Now, Version: p.Version}
	if a.By == "" {
		a.By = decidedBy(x.in.Actor)
	}
	if !pol.RequesterMayApprove && p.EditedBy != "" && a.By == p.EditedBy {
		x.refuse(fmt.Sprintf("You edited %s; another approver must accept it.", planLabel(p)),
			x.event(EventRefused, &p, "accept by the editor refused: requester_may_approve is false"))
		return false, nil
	}
	st, v := RecordApproval(ApprovalState{Version: p.Version, Approvals: p.Approvals}, a, p.Requesters, pol)
	switch v.Kind {
	case VerdictRequesterRefused:
		text := "You asked for this plan; another approver must accept it."
		if prog := ApprovalProgress(st, pol); prog != "" {
			text += fmt.Sprintf(" %s: %s.", planLabel(p), prog)
		}
		x.refuse(text, x.event(EventRefused, &p, "accept by the requester refused: requester_may_approve is false"))
		return false, nil
	case VerdictDuplicate:
		x.refuse(upperFirst(v.Text)+".", x.event(EventRefused, &p, "duplicate approval"))
		return false, nil
	case VerdictCounted:
		return false, x.counted(p, st, pol, v)
	}
	x.target.Approvals = st.Approvals
	return true, nil
}

// stuck is the line a pending version's message adds when it can no longer get its
// approvals (Policy.unreachable): its requesters and editor set aside, too few of the
// people who may decide are left. "" otherwise.
func (x *transition) stuck(p Plan) string {
	excluded := make([]string, 0, len(p.Requesters)+1)
	for _, r := range p.Requesters {
		excluded = append(excluded, r.By)
	}
	if p.EditedBy != "" {
		excluded = append(excluded, p.EditedBy)
	}
	why := x.policy().unreachable(x.in.Rules.Approvers, x.s.Address.Channel+":"+x.s.Owner, excluded, p.Approvals)
	if why == "" {
		return ""
	}
	return "\n" + why
}

// counted keeps the version pending with one more approval (TrigApprove: the phase and
// plan-status tables are asked again); the buttons stay where they are.
func (x *transition) counted(p Plan, st ApprovalState, pol Policy, v ApprovalVerdict) error {
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
	x.record(x.event(EventApprovalRecorded, &p, progress))
	x.o.Effects = append(x.o.Effects, Effect{Kind: EffApprovals, Plan: p, Reply: Reply{To: x.s.Address, Kind: ReplyApprovals,
		Ref: p.ApprovalID, Text: planLabel(p) + " — " + progress}})
	more := v.Required - v.Count
	x.o.say(ReplyText, fmt.Sprintf("Approval recorded for %s: %s. It needs %d more %s before work starts.",
		planLabel(p), progress, more, plural(more, "approver", "approvers")))
	return nil
}

// voidApprovals drops the partial approvals of p, which is being revised or replaced;
// it returns the words for the reply ("" when there were none).
func voidApprovals(p *Plan) string {
	if len(p.Approvals) == 0 {
		return ""
	}
	names := make([]string, len(p.Approvals))
	for i, a := range p.Approvals {
		names[i] = approverName(a)
	}
	n := len(p.Approvals)
	p.Approvals = nil
	return fmt.Sprintf(" The %s it had (%s) no longer %s.", plural(n, "approval", "approvals"), strings.Join(names, ", "), plural(n, "counts", "count"))
}

// approverName is how an approval names its approver: the display name, else the id.
func approverName(a plan.Approval) string {
	if a.ByName != "" {
		return a.ByName
	}
	return a.By
}
