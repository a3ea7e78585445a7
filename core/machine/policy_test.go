package machine

import (
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

func TestPolicyFor(t *testing.T) {
	prod := Policy{Match: PolicyMatch{Channel: "slack", Chat: "C0PROD"}, Approvers: []string{"slack:U1", "slack:U2"}, Required: 2}
	slackAll := Policy{Match: PolicyMatch{Channel: "slack"}, Required: 1, RequesterMayApprove: true}
	team := Policy{Match: PolicyMatch{Account: "T9"}, Required: 1}
	policies := []Policy{prod, slackAll, team}
	cases := []struct {
		name string
		addr core.Address
		want Policy
	}{
		{"first match wins", core.Address{Channel: "slack", Account: "T9", Chat: "C0PROD"}, prod},
		{"omitted chat matches all", core.Address{Channel: "slack", Account: "T1", Chat: "C1"}, slackAll},
		{"account only", core.Address{Channel: "discord", Account: "T9", Chat: "x"}, team},
		{"no match", core.Address{Channel: "telegram", Account: "bot", Chat: "42"}, DefaultPolicy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PolicyFor(policies, tc.addr, "")
			if got.Match != tc.want.Match || got.Required != tc.want.Required || got.RequesterMayApprove != tc.want.RequesterMayApprove {
				t.Errorf("PolicyFor = %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := PolicyFor(nil, core.Address{Channel: "terminal"}, plan.RiskHigh); !got.RequesterMayApprove || got.Required != 1 || got.Approvers != nil {
		t.Errorf("no policies: %+v, want the default", got)
	}
	global := []string{"slack:U9"}
	if got := DefaultPolicy.ApproverList(global); len(got) != 1 || got[0] != "slack:U9" {
		t.Errorf("default policy approvers = %v, want the global list", got)
	}
	if got := prod.ApproverList(global); len(got) != 2 {
		t.Errorf("policy approvers = %v, want its own", got)
	}
}

// Risk rules make a session's policy stricter for plans of their level only, never looser,
// keep its approvers, and a plan that states no risk counts as high.
func TestPolicyForRisk(t *testing.T) {
	prod := Policy{Match: PolicyMatch{Channel: "slack", Chat: "C0PROD"}, Approvers: []string{"slack:U1", "slack:U2", "slack:U3"}, Required: 2}
	high := Policy{Match: PolicyMatch{Risk: plan.RiskHigh}, Required: 3, RequesterMayApprove: true}
	loose := Policy{Match: PolicyMatch{Risk: plan.RiskLow}, Required: 1, RequesterMayApprove: true}
	mediumTelegram := Policy{Match: PolicyMatch{Channel: "telegram", Risk: plan.RiskMedium}, Required: 1}
	policies := []Policy{high, loose, mediumTelegram, prod}
	prodAddr := core.Address{Channel: "slack", Chat: "C0PROD"}
	tgAddr := core.Address{Channel: "telegram", Chat: "42"}
	cases := []struct {
		name      string
		addr      core.Address
		risk      plan.RiskLevel
		required  int
		requester bool
		approvers int
		because   plan.RiskLevel
	}{
		{"no plan: risk rules do not apply", prodAddr, "", 2, false, 3, ""},
		{"high raises the count, keeps the approvers", prodAddr, plan.RiskHigh, 3, false, 3, plan.RiskHigh},
		{"a low rule never loosens", prodAddr, plan.RiskLow, 2, false, 3, ""},
		{"medium elsewhere is the session's own", prodAddr, plan.RiskMedium, 2, false, 3, ""},
		{"a requester rule on its channel", tgAddr, plan.RiskMedium, 1, false, 0, plan.RiskMedium},
		{"high on the default policy", tgAddr, plan.RiskHigh, 3, true, 0, plan.RiskHigh},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PolicyFor(policies, tc.addr, tc.risk)
			if got.needed() != tc.required || got.RequesterMayApprove != tc.requester || len(got.Approvers) != tc.approvers || got.Risk != tc.because {
				t.Errorf("PolicyFor(%v, %q) = %+v, want required %d, requester_may_approve %v, %d approvers, risk %q",
					tc.addr, tc.risk, got, tc.required, tc.requester, tc.approvers, tc.because)
			}
		})
	}
	if got := PlanRisk(plan.Body{}); got != plan.RiskHigh {
		t.Errorf("PlanRisk of a plan stating no risk = %q, want high", got)
	}
	if got := PlanRisk(plan.Body{Risk: plan.RiskLow}); got != plan.RiskLow {
		t.Errorf("PlanRisk(low) = %q", got)
	}
	if got := PolicyFor(policies, prodAddr, plan.RiskHigh).needs(nil); !strings.Contains(got, "It is high risk, so it needs 3 approvals from different people, not from whoever asked for it.") {
		t.Errorf("needs = %q", got)
	}
}

func TestRecordApproval(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	alice := plan.Approval{By: "slack:U1", ByName: "alice", At: at, Version: 2}
	bob := plan.Approval{By: "slack:U2", ByName: "bob", At: at, Version: 2}
	carol := plan.Approval{By: "slack:U3", At: at, Version: 2}
	twoOf3 := Policy{Approvers: []string{"slack:U1", "slack:U2", "slack:U3"}, Required: 2}
	open := Policy{Required: 2, RequesterMayApprove: true}

	type step struct {
		a         plan.Approval
		requester string
		policy    Policy
		kind      VerdictKind
		count     int
		text      string
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"default policy accepts the first", []step{{alice, "slack:U1", DefaultPolicy, VerdictAccepted, 1, ""}}},
		{"zero required means one", []step{{alice, "", Policy{RequesterMayApprove: true}, VerdictAccepted, 1, ""}}},
		{"two of three with the requester refused", []step{
			{bob, "slack:U2", twoOf3, VerdictRequesterRefused, 0, "you asked for this plan; another approver must accept it"},
			{alice, "slack:U2", twoOf3, VerdictCounted, 1, "1 of 2 approvals (alice)"},
			{alice, "slack:U2", twoOf3, VerdictDuplicate, 1, "you already approved plan v2; 1 of 2 approvals (alice)"},
			{carol, "slack:U2", twoOf3, VerdictAccepted, 2, "2 of 2 approvals (alice, slack:U3)"},
		}},
		{"requester may approve", []step{
			{alice, "slack:U1", open, VerdictCounted, 1, "1 of 2 approvals (alice)"},
			{bob, "slack:U1", open, VerdictAccepted, 2, "2 of 2 approvals (alice, bob)"},
		}},
		{"a new version voids partial approvals", []step{
			{alice, "", open, VerdictCounted, 1, "1 of 2 approvals (alice)"},
			{plan.Approval{By: "slack:U2", ByName: "bob", Version: 3}, "", open, VerdictCounted, 1, "1 of 2 approvals (bob)"},
			{plan.Approval{By: "slack:U1", ByName: "alice", Version: 3}, "", open, VerdictAccepted, 2, "2 of 2 approvals (bob, alice)"},
		}},
		{"unknown requester refuses nobody", []step{{alice, "", twoOf3, VerdictCounted, 1, "1 of 2 approvals (alice)"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := ApprovalState{Version: 2}
			for i, s := range tc.steps {
				before := len(st.Approvals)
				var asked []core.Requester
				if s.requester != "" {
					asked = []core.Requester{{By: s.requester}}
				}
				next, v := RecordApproval(st, s.a, asked, s.policy)
				if v.Kind != s.kind || v.Count != s.count || len(next.Approvals) != s.count {
					t.Fatalf("step %d: verdict %+v with %d approvals, want %s with %d", i, v, len(next.Approvals), s.kind, s.count)
				}
				if s.text != "" && v.Text != s.text {
					t.Errorf("step %d: text %q, want %q", i, v.Text, s.text)
				}
				if len(st.Approvals) != before {
					t.Errorf("step %d: RecordApproval changed its input state", i)
				}
				st = next
			}
		})
	}
}

func TestApprovalProgress(t *testing.T) {
	if got := ApprovalProgress(ApprovalState{}, DefaultPolicy); got != "" {
		t.Errorf("single approval, none yet: %q, want empty", got)
	}
	if got := ApprovalProgress(ApprovalState{}, Policy{Required: 3}); got != "0 of 3 approvals" {
		t.Errorf("got %q", got)
	}
}

func TestPolicyProblem(t *testing.T) {
	cases := []struct {
		name   string
		p      Policy
		global []string
		want   string
	}{
		{"fits", Policy{Approvers: []string{"slack:U1", "slack:U2"}, Required: 2}, nil, ""},
		{"too few own", Policy{Approvers: []string{"slack:U1", "slack:U1"}, Required: 2}, nil, "required is 2 but approvers lists only 1 person"},
		{"too few global", Policy{Required: 3}, []string{"slack:U1", "slack:U2"}, "access.approvers lists only 2 people"},
		{"owner only", Policy{Required: 2}, nil, "only the session owner decides"},
		{"owner, one", Policy{Required: 1}, nil, ""},
		{"role", Policy{Approvers: []string{"discord-role:7"}, Required: 5}, nil, ""},
		{"negative", Policy{Required: -1}, nil, "must be 1 or more"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PolicyProblem(tc.p, tc.global)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("PolicyProblem = %q, want %q", got, tc.want)
			}
		})
	}
}
