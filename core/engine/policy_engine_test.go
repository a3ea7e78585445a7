package engine_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// The requesters of a version are the people whose messages its planning answered: the
// request, revisions, answers, comments; never whoever typed a bare /plan on. /plan off
// forgets them.
func TestRequestersStampedOnVersions(t *testing.T) {
	h := newHarness(t)
	h.say("c", "alice", "/plan on")
	if got := h.session("c").Requesters; len(got) != 0 {
		t.Fatalf("after a bare /plan on the session's requesters are %+v, want none", got)
	}
	h.model.push(sessionID("c"), calls(propose("Docs", "First step", "Second step")))
	h.say("c", "bob", "make a plan")
	h.model.push(sessionID("c"), calls(propose("Docs v2", "First step", "Second step", "Third step")))
	h.say("c", "alice", "/plan revise smaller")
	ps := h.plans("c")
	if len(ps) != 2 {
		t.Fatalf("plans: %d, want 2", len(ps))
	}
	if got := requesterIDs(ps[0].Requesters); !slices.Equal(got, []string{"terminal:bob"}) {
		t.Errorf("v1 requesters %q, want bob's", got)
	}
	if got := requesterIDs(ps[1].Requesters); !slices.Equal(got, []string{"terminal:bob", "terminal:alice"}) {
		t.Errorf("v2 requesters %q, want bob's and alice's (she sent it back)", got)
	}
	mustContain(t, joinTexts(h.say("c", "carol", "/plan status")), "asked by: bob, alice")
	h.say("c", "alice", "/plan off")
	if got := h.session("c").Requesters; len(got) != 0 {
		t.Errorf("after /plan off the requesters are %+v, want none", got)
	}

	// The agent entering plan mode in a turn bob's message started: bob asked.
	h.model.push(sessionID("d"), calls(call("enter_plan_mode", map[string]any{})), calls(propose("Tests", "First step", "Second step")))
	h.say("d", "bob", "please plan the tests")
	s := h.session("d")
	if s.Phase != core.PhaseAwaitingApproval || !slices.Equal(requesterIDs(s.Requesters), []string{"terminal:bob"}) {
		t.Fatalf("phase %s, requesters %+v; want awaiting_approval, bob", s.Phase, s.Requesters)
	}
	if p := h.plan(s.PlanID); !slices.Equal(requesterIDs(p.Requesters), []string{"terminal:bob"}) {
		t.Errorf("plan requesters %+v, want bob", p.Requesters)
	}
}

func requesterIDs(list []core.Requester) []string {
	out := make([]string, len(list))
	for i, r := range list {
		out[i] = r.By
	}
	return out
}

// onlyOtherDecides: alice and bob decide in chat prod, one approval, never a requester's.
func onlyOtherDecides(c *engine.Config) {
	c.Policies = []machine.Policy{{Match: machine.PolicyMatch{Channel: "terminal", Chat: "prod"},
		Approvers: []string{"terminal:alice", "terminal:bob"}, Required: 1}}
}

// Under requester_may_approve: false, alice cannot get her own request accepted by having
// bob type the bare /plan on: she wrote the request, so she asked. The store shows the
// plan pending with no approval.
func TestRequesterIsWhoWroteTheRequestNotWhoTurnedPlanModeOn(t *testing.T) {
	h := newHarness(t, onlyOtherDecides)
	h.say("prod", "bob", "/plan on")
	h.model.push(sessionID("prod"), calls(propose("Deploy", "First step", "Second step")))
	h.say("prod", "alice", "deploy the new release")
	s := h.session("prod")
	if s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("phase %s; replies:\n%s", s.Phase, joinTexts(h.out.all()))
	}
	mustContain(t, lastText(h.say("prod", "alice", "/plan accept")), "You asked for this plan; another approver must accept it.")
	if p := h.plan(s.PlanID); p.Status != core.PlanPending || len(p.Approvals) != 0 || p.Decision != nil {
		t.Fatalf("after alice's accept the stored plan is %s with approvals %+v, decision %+v; want pending, none", p.Status, p.Approvals, p.Decision)
	}
	if s := h.session("prod"); s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("after alice's accept the session is %s", s.Phase)
	}
	h.say("prod", "bob", "/plan accept")
	if p := h.plan(s.PlanID); p.Status != core.PlanAccepted || p.Decision == nil || p.Decision.By != "bob" {
		t.Fatalf("after bob's accept the stored plan is %s, decision %+v; want accepted by bob", p.Status, p.Decision)
	}
}

// The turn that carries out bob's acceptance of alice's plan proposes the next plan: it
// answers alice's request, not bob (who only approved), so alice still may not accept it.
func TestApproverDoesNotBecomeTheNextPlansRequester(t *testing.T) {
	h := newHarness(t, onlyOtherDecides)
	h.say("prod", "alice", "/plan on migrate the database")
	h.model.push(sessionID("prod"), calls(propose("Migrate", "First step", "Second step")))
	h.say("prod", "alice", "go on")
	v1 := h.plan(h.session("prod").PlanID)
	// bob's accept starts the turn that carries out v1; it finishes, plans again and
	// proposes v2.
	h.model.push(sessionID("prod"), calls(update(stepArg{Step: "First step", Status: "completed"}, stepArg{Step: "Second step", Status: "completed"})),
		calls(call("enter_plan_mode", map[string]any{})), calls(propose("Migrate, part two", "Third step", "Fourth step")))
	h.say("prod", "bob", "/plan accept")
	s := h.session("prod")
	v2 := h.plan(s.PlanID)
	if s.Phase != core.PhaseAwaitingApproval || v2.ID == v1.ID {
		t.Fatalf("phase %s, plan %s; want a new pending version; replies:\n%s", s.Phase, v2.ID, joinTexts(h.out.all()))
	}
	if got := requesterIDs(v2.Requesters); !slices.Equal(got, []string{"terminal:alice"}) {
		t.Errorf("v2 requesters %q, want alice's only (bob approved v1, he asked for nothing)", got)
	}
	h.say("prod", "alice", "/plan accept")
	if p := h.plan(v2.ID); p.Status != core.PlanPending || len(p.Approvals) != 0 || p.Decision != nil {
		t.Fatalf("after alice's accept of v2 the stored plan is %s, approvals %+v, decision %+v; want pending", p.Status, p.Approvals, p.Decision)
	}
}

// A version no one left may accept says so when it is proposed: under two of alice and
// bob, never a requester's, alice's own request can only be decided through the admin API.
func TestUnreachableApprovalsAreSaidAtOnce(t *testing.T) {
	h := newHarness(t, func(c *engine.Config) {
		c.Policies = []machine.Policy{{Match: machine.PolicyMatch{Channel: "terminal", Chat: "prod"},
			Approvers: []string{"terminal:alice", "terminal:bob"}, Required: 2}}
	})
	h.say("prod", "alice", "/plan on deploy")
	h.model.push(sessionID("prod"), calls(propose("Deploy", "First step", "Second step")))
	got := joinTexts(h.say("prod", "alice", "go on"))
	mustContain(t, got, "Needs 2 approvals from different people, not from whoever asked for it (alice).")
	mustContain(t, got, "It cannot get the approvals it needs: 2 more, and only one person who may decide is left")
	// Where enough people are left it says nothing of the kind.
	h2 := newHarness(t, twoOfThree)
	h2.pendingFor("prod", "Deploy")
	if got := joinTexts(h2.out.all()); strings.Contains(got, "cannot get the approvals") {
		t.Errorf("two of three with one requester was called unreachable:\n%s", got)
	}
}

func twoOfThree(c *engine.Config) {
	c.Approvers = []string{"terminal:local"}
	c.Policies = []machine.Policy{{Match: machine.PolicyMatch{Channel: "terminal", Chat: "prod"},
		Approvers: []string{"terminal:alice", "terminal:bob", "terminal:carol"}, Required: 2}}
}

// pendingFor drives chat to a pending two-step plan that alice asked for.
func (h *harness) pendingFor(chat, title string) core.Plan {
	h.t.Helper()
	h.say(chat, "alice", "/plan on "+title)
	h.model.push(sessionID(chat), calls(propose(title, "First step", "Second step")))
	h.say(chat, "alice", "go on")
	s := h.session(chat)
	if s.Phase != core.PhaseAwaitingApproval {
		h.t.Fatalf("setup: phase %s; replies:\n%s", s.Phase, joinTexts(h.out.all()))
	}
	return h.plan(s.PlanID)
}

func TestTwoOfThreeApprovals(t *testing.T) {
	h := newHarness(t, twoOfThree)
	p := h.pendingFor("prod", "Deploy")

	mustContain(t, lastText(h.say("prod", "alice", "/plan accept")), "You asked for this plan; another approver must accept it.")
	mustContain(t, lastText(h.say("prod", "local", "/plan accept")), "Only approvers can decide on plans here (local is not one).")

	got := lastText(h.click("prod", "bob", core.Action{Kind: core.ActionAccept, ApprovalID: p.ApprovalID}))
	mustContain(t, got, `Approval recorded for Plan v1 "Deploy": 1 of 2 approvals (bob). It needs 1 more approver before work starts.`)
	if s := h.session("prod"); s.Phase != core.PhaseAwaitingApproval || s.ApprovalID != p.ApprovalID {
		t.Fatalf("after one approval: phase %s, approval id %q; want awaiting_approval with the same id", s.Phase, s.ApprovalID)
	}
	stored := h.plan(p.ID)
	if stored.Status != core.PlanPending || len(stored.Approvals) != 1 || stored.Approvals[0].By != "terminal:bob" || stored.Approvals[0].Version != 1 {
		t.Fatalf("after one approval: plan %s, approvals %+v", stored.Status, stored.Approvals)
	}
	mustContain(t, lastText(h.say("prod", "bob", "/plan accept")), "You already approved plan v1; 1 of 2 approvals (bob).")
	mustContain(t, joinTexts(h.say("prod", "bob", "/plan status")), "approvals: 1 of 2 approvals (bob)")

	mustContain(t, joinTexts(h.say("prod", "carol", "/plan accept")), `Accepted plan v1 "Deploy" with 2 of 2 approvals (bob, carol). Working on it.`)
	if s := h.session("prod"); s.Phase != core.PhaseExecuting {
		t.Fatalf("after two approvals: phase %s", s.Phase)
	}
	if stored := h.plan(p.ID); stored.Status != core.PlanAccepted || len(stored.Approvals) != 2 {
		t.Fatalf("accepted plan: %s, approvals %+v", stored.Status, stored.Approvals)
	}
	evs, err := h.st.Events(context.Background(), sessionID("prod"))
	if err != nil {
		t.Fatal(err)
	}
	var recorded, refused []string
	for _, e := range evs {
		switch e.Kind {
		case core.EventApprovalRecorded:
			recorded = append(recorded, e.Actor.String()+" "+e.Detail)
		case core.EventRefused:
			refused = append(refused, e.Actor.String()+" "+e.Detail)
		}
	}
	if want := []string{"person:bob 1 of 2 approvals (bob)"}; !slices.Equal(recorded, want) {
		t.Errorf("approval_recorded rows %q, want %q", recorded, want)
	}
	if len(refused) != 3 || !strings.Contains(refused[0], "person:alice accept by the requester refused") ||
		!strings.Contains(refused[2], "person:bob duplicate approval") {
		t.Errorf("refused rows %q", refused)
	}
	// Elsewhere the global list and one approval still hold.
	h.toExecuting("other", "Docs")
}

func TestReviseVoidsPartialApprovals(t *testing.T) {
	h := newHarness(t, twoOfThree)
	p := h.pendingFor("prod", "Deploy")
	h.say("prod", "bob", "/plan accept")
	h.model.push(sessionID("prod"), calls(propose("Deploy", "First step", "Second step", "Third step")))
	got := joinTexts(h.say("prod", "carol", "/plan revise add a third step"))
	mustContain(t, got, "Sent plan v1 back for revision (1st time). I'll propose a new version. The approval it had (bob) no longer counts.")
	if old := h.plan(p.ID); old.Status != core.PlanRevised || len(old.Approvals) != 0 {
		t.Fatalf("revised plan: %s, approvals %+v", old.Status, old.Approvals)
	}
	s := h.session("prod")
	v2 := h.plan(s.PlanID)
	if v2.Version != 2 || len(v2.Approvals) != 0 || !slices.Equal(requesterIDs(v2.Requesters), []string{"terminal:alice", "terminal:carol"}) {
		t.Fatalf("v2: version %d, approvals %+v, requested by %+v; want alice and carol (who sent it back)", v2.Version, v2.Approvals, v2.Requesters)
	}
	// bob's approval of v1 does not carry over: his accept of v2 is the first again.
	mustContain(t, lastText(h.say("prod", "bob", "/plan accept")), "1 of 2 approvals (bob)")
	if s := h.session("prod"); s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("phase %s after one approval of v2", s.Phase)
	}
}

// Under a policy that needs more than one person's word, no switch or rule stands in for
// them: /plan auto on is refused, a session flag set earlier and a matching rule do not
// accept, and the plan waits.
func TestStrictPolicyHasNoAutoApprove(t *testing.T) {
	h := newHarness(t, twoOfThree, func(c *engine.Config) {
		c.AutoApproveRules = []machine.ApproveRule{{Name: "all", Paths: []string{"**"}}}
	})
	h.say("prod", "alice", "/plan on")
	mustContain(t, lastText(h.say("prod", "bob", "/plan auto")), "Auto-approve is not available in this conversation: its approval policy (access.policies) needs 2 approvals from different people.")
	h.setAuto("prod", true)
	h.model.push(sessionID("prod"), calls(proposeScoped("Deploy", []string{"docs/**"}, "First step", "Second step")))
	got := joinTexts(h.say("prod", "alice", "go on"))
	mustContain(t, got, "Needs 2 approvals from different people, not from whoever asked for it (alice).")
	if s := h.session("prod"); s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("phase %s, want awaiting_approval: neither the flag nor the rule may accept here", s.Phase)
	}
}

// A new version proposed while one is pending (after a comment) voids its approvals too.
func TestNewVersionVoidsPartialApprovals(t *testing.T) {
	h := newHarness(t, twoOfThree)
	p := h.pendingFor("prod", "Deploy")
	h.say("prod", "bob", "/plan accept")
	h.model.push(sessionID("prod"), calls(propose("Deploy", "First step", "Second step", "Smoke test")))
	h.say("prod", "carol", "please add a smoke test")
	if old := h.plan(p.ID); old.Status != core.PlanSuperseded || len(old.Approvals) != 0 {
		t.Fatalf("superseded v1: %s, approvals %+v", old.Status, old.Approvals)
	}
	mustContain(t, lastText(h.say("prod", "bob", "/plan accept")), `Approval recorded for Plan v2 "Deploy": 1 of 2 approvals (bob).`)
}

func proposeAtRisk(title, risk string, steps ...string) core.ToolCall {
	c := propose(title, steps...)
	var args map[string]any
	if err := json.Unmarshal([]byte(c.Args), &args); err != nil {
		panic(err)
	}
	if risk != "" {
		args["risk"] = risk
	}
	return call("exit_plan_mode", args)
}

// highRiskNeedsTwo: alice, bob and carol decide; a high-risk plan needs two of them.
func highRiskNeedsTwo(c *engine.Config) {
	c.Approvers = []string{"terminal:alice", "terminal:bob", "terminal:carol"}
	c.Policies = []machine.Policy{{Match: machine.PolicyMatch{Risk: plan.RiskHigh}, Required: 2, RequesterMayApprove: true}}
}

// A risk rule (access.policies match.risk) holds a high-risk version, and one that states
// no risk, until two people accept it, while one approval accepts a low-risk version;
// auto-approve neither accepts a pending high-risk version nor takes a new one. The store
// shows each version's approvals and status.
func TestHighRiskPlanNeedsTwoApprovals(t *testing.T) {
	h := newHarness(t, highRiskNeedsTwo)
	h.say("low", "alice", "/plan on")
	h.model.push(sessionID("low"), calls(proposeAtRisk("Fix typos", "low", "First step", "Second step")))
	h.say("low", "alice", "fix the typos")
	low := h.session("low").PlanID
	h.say("low", "alice", "/plan accept")
	if p := h.plan(low); p.Status != core.PlanAccepted || len(p.Approvals) != 1 {
		t.Fatalf("low-risk plan after one accept: %s with %d approvals, want accepted with 1; replies:\n%s", p.Status, len(p.Approvals), joinTexts(h.out.all()))
	}

	for chat, risk := range map[string]string{"high": "high", "unstated": ""} {
		h.say(chat, "alice", "/plan on")
		h.model.push(sessionID(chat), calls(proposeAtRisk("Migrate", risk, "First step", "Second step")))
		proposal := joinTexts(h.say(chat, "alice", "migrate the database"))
		s := h.session(chat)
		if s.Phase != core.PhaseAwaitingApproval {
			t.Fatalf("%s: phase %s; replies:\n%s", chat, s.Phase, proposal)
		}
		mustContain(t, proposal, "It is high risk, so it needs 2 approvals from different people.")
		mustContain(t, lastText(h.say(chat, "bob", "/plan auto on")), `Auto-approve cannot accept plan v1 "Migrate": it is high risk`)
		if s := h.session(chat); s.AutoApprove || s.Phase != core.PhaseAwaitingApproval {
			t.Fatalf("%s: /plan auto on changed the session: auto %v, phase %s", chat, s.AutoApprove, s.Phase)
		}
		mustContain(t, joinTexts(h.say(chat, "alice", "/plan accept")), "1 of 2 approvals (alice)")
		if p := h.plan(s.PlanID); p.Status != core.PlanPending || len(p.Approvals) != 1 {
			t.Fatalf("%s after one accept: %s with %d approvals, want pending with 1", chat, p.Status, len(p.Approvals))
		}
		mustContain(t, joinTexts(h.say(chat, "carol", "/plan status")), "approvals: 1 of 2 approvals (alice), as a high-risk plan")
		h.say(chat, "bob", "/plan accept")
		if p := h.plan(s.PlanID); p.Status != core.PlanAccepted || len(p.Approvals) != 2 || p.Decision == nil || p.Decision.By != "bob" {
			t.Fatalf("%s after bob's accept: %s, approvals %+v, decision %+v; want accepted by bob with 2", chat, p.Status, p.Approvals, p.Decision)
		}
	}

	// Auto-approve is on for the session, a high-risk proposal still waits for people.
	h.say("auto", "alice", "/plan on")
	h.say("auto", "bob", "/plan auto on")
	if !h.session("auto").AutoApprove {
		t.Fatalf("auto-approve with no plan pending was refused: %s", joinTexts(h.out.all()))
	}
	h.model.push(sessionID("auto"), calls(proposeAtRisk("Drop tables", "high", "First step", "Second step")))
	h.say("auto", "alice", "drop the old tables")
	if s := h.session("auto"); s.Phase != core.PhaseAwaitingApproval || h.plan(s.PlanID).Status != core.PlanPending {
		t.Fatalf("high-risk proposal under auto-approve: phase %s, want awaiting approval", s.Phase)
	}
}
