package discord

import (
	"slices"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
)

// A counted approval (2 needed) shows on the plan message and keeps its buttons; the
// second approval retires them.
func TestCountedApprovalKeepsTheButtons(t *testing.T) {
	carol := user{id: "333", name: "carol"}
	e := newEnv(t, func(e *env) {
		e.Core.Approvers = nil
		e.Core.Policies = []machine.Policy{{Match: machine.PolicyMatch{Channel: Name},
			Approvers: []string{"discord:" + alice.id, "discord:" + bob.id, "discord:" + carol.id}, Required: 2, RequesterMayApprove: true}}
	})
	plan, s := e.proposePlan("Docs cleanup", "Reword intro", "Fix links")
	buttons := buttonsOf(plan)
	click := e.fd.click(bob, plan, "plan:a:"+s.ApprovalID)
	e.waitCallback(click)
	e.fd.waitText("C1", "1 of 2 approvals (")
	e.Idle()
	shown := func() shownMsg {
		for _, m := range e.fd.shown("C1") {
			if m.ID == plan.ID {
				return m
			}
		}
		t.Fatalf("no plan message %s", plan.ID)
		return shownMsg{}
	}
	if m := shown(); !strings.Contains(m.Content, "1 of 2 approvals") || !slices.Equal(buttonsOf(m), buttons) {
		t.Fatalf("after one approval the plan message is %q with buttons %q; want the count and %q", m.Content, buttonsOf(m), buttons)
	}
	if ph := e.Session(sid("C1")).Phase; ph != core.PhaseAwaitingApproval {
		t.Fatalf("phase %s after one of two approvals", ph)
	}
	click = e.fd.click(carol, plan, "plan:a:"+s.ApprovalID)
	e.waitCallback(click)
	e.waitPhase("C1", core.PhaseExecuting)
	e.Idle()
	if m := shown(); len(buttonsOf(m)) != 0 || strings.Contains(m.Content, "1 of 2") {
		t.Errorf("decided plan message %q with buttons %q; want the decision only, no buttons", m.Content, buttonsOf(m))
	}
}
