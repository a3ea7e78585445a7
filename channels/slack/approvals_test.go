package slack

import (
	"slices"
	"strings"
	"testing"

	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
)

const carol = "U0CAROL"

// Two of three approvers in a Slack channel, the requester refused (docs/design.md §12): the
// plan message keeps its buttons and shows the count until the second approval.
func TestTwoOfThreeApprovalsInAChannel(t *testing.T) {
	e := newEnv(t, func(e *env) {
		e.Core.Policies = []machine.Policy{{Match: machine.PolicyMatch{Channel: Name, Chat: general},
			Approvers: []string{"slack:" + alice, "slack:" + bob, "slack:" + carol}, Required: 2}}
	})
	for id, name := range map[string]string{alice: "alice", bob: "bob", carol: "carol"} {
		e.api.name(id, name)
	}
	thread := e.api.userTS()
	sid := e.sid(general, thread)
	e.Model.Push(sid, channeltest.Proposal("Deploy the API", "Build the image", "Roll it out"))
	e.api.mentionTS(thread, general, alice, "/plan on deploy the API", "")
	s := e.waitPhase(general, thread, core.PhaseAwaitingApproval)
	plan := e.planMsg(general, s.ApprovalID)
	buttons := plan.buttons()

	env, _ := e.api.click(plan, alice, actionAccept, s.ApprovalID)
	e.api.waitAck(env)
	e.api.waitFor("alice told she may not approve", func() bool {
		return slices.ContainsFunc(e.api.ephemerals, func(m ephemeral) bool {
			return m.User == alice && strings.Contains(m.Text, "You asked for this plan; another approver must accept it.")
		})
	})

	env, _ = e.api.click(plan, bob, actionAccept, s.ApprovalID)
	e.api.waitAck(env)
	e.api.waitText(general, "1 of 2 approvals (bob)")
	e.api.waitFor("the plan message showing bob's approval", func() bool {
		for _, m := range e.api.msgs {
			if m.TS == plan.TS && strings.Contains(m.shown(), "1 of 2 approvals (bob)") {
				return true
			}
		}
		return false
	})
	e.Idle()
	if got := e.current(general, plan.TS); !slices.Equal(got.buttons(), buttons) || !strings.Contains(got.shown(), "Plan v1 — Deploy the API") {
		t.Fatalf("after one approval the plan message shows %q with buttons %q; want the plan, the count and its buttons", got.shown(), got.buttons())
	}
	if ph := e.Session(sid).Phase; ph != core.PhaseAwaitingApproval {
		t.Fatalf("phase %s after one of two approvals", ph)
	}

	env, _ = e.api.click(plan, carol, actionAccept, s.ApprovalID)
	e.api.waitAck(env)
	e.waitPhase(general, thread, core.PhaseExecuting)
	e.api.waitText(general, "2 of 2 approvals (bob, carol)")
	e.Idle()
	decided := e.current(general, plan.TS)
	if len(decided.buttons()) != 0 || !strings.Contains(decided.shown(), "accepted by carol") {
		t.Errorf("decided plan message shows %q with buttons %q; want who accepted it and no buttons", decided.shown(), decided.buttons())
	}
}
