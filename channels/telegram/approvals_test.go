package telegram

import (
	"slices"
	"strings"
	"testing"

	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
)

// A counted approval (2 needed) shows on the plan document's caption and keeps its
// keyboard; the second approval retires it.
func TestCountedApprovalKeepsTheKeyboard(t *testing.T) {
	carol := user{id: 33, name: "carol"}
	e := newEnv(t, func(e *env) {
		e.Core.Policies = []machine.Policy{{Match: machine.PolicyMatch{Channel: Name},
			Approvers: []string{"telegram:11", "telegram:22", "telegram:33"}, Required: 2, RequesterMayApprove: true}}
	})
	sid := e.sessionID(group)
	e.Model.Push(sid, channeltest.Proposal("Docs cleanup", "Reword intro", "Fix links"))
	e.api.say(group, alice, "/plan@PlanGateBot on tidy the docs")
	doc := e.waitDoc(group, `^plan-.*docs-cleanup-v1\.md$`)
	s := e.waitPhase(group, core.PhaseAwaitingApproval)
	keys := keyboardData(t, doc)

	qid := e.api.click(group, bob, doc.ID, "a:"+s.ApprovalID)
	if toast := e.api.waitAnswer(qid); !strings.Contains(toast, "1 of 2 approvals (bob)") {
		t.Errorf("toast %q, want the count", toast)
	}
	e.Idle()
	counted := e.msg(group, doc.ID)
	if !strings.Contains(counted.Text, "1 of 2 approvals (bob)") || !slices.Equal(keyboardData(t, counted), keys) {
		t.Fatalf("after one approval the caption is %q with keys %q; want the count and the same keys %q", counted.Text, keyboardData(t, counted), keys)
	}
	if ph := e.Session(sid).Phase; ph != core.PhaseAwaitingApproval {
		t.Fatalf("phase %s after one of two approvals", ph)
	}
	qid = e.api.click(group, carol, doc.ID, "a:"+s.ApprovalID)
	e.api.waitAnswer(qid)
	e.waitPhase(group, core.PhaseExecuting)
	e.Idle()
	decided := e.msg(group, doc.ID)
	if len(keyboardData(t, decided)) != 0 || !strings.Contains(decided.Text, "accepted by carol") || strings.Contains(decided.Text, "1 of 2") {
		t.Errorf("decided caption %q, keys %q; want who accepted it, no count and no keys", decided.Text, keyboardData(t, decided))
	}
}
