package core_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
)

// The requester (DESIGN.md 12) is the person whose /plan on or message started the
// planning; every version proposed in it carries them.
func TestRequesterStampedOnVersions(t *testing.T) {
	h := newHarness(t)
	h.say("c", "alice", "/plan on")
	if got := h.session("c").RequestedBy; got != "terminal:alice" {
		t.Fatalf("session RequestedBy = %q, want terminal:alice", got)
	}
	h.model.push(sessionID("c"), calls(propose("Docs", "First step", "Second step")))
	h.say("c", "bob", "make a plan") // a later message does not change who asked
	h.say("c", "alice", "/plan revise smaller")
	h.model.push(sessionID("c"), calls(propose("Docs v2", "First step", "Second step", "Third step")))
	h.say("c", "bob", "go on")
	ps := h.plans("c")
	if len(ps) != 2 {
		t.Fatalf("plans: %d, want 2", len(ps))
	}
	for _, p := range ps {
		if p.RequestedBy != "terminal:alice" {
			t.Errorf("v%d RequestedBy = %q, want terminal:alice", p.Version, p.RequestedBy)
		}
	}
	h.say("c", "alice", "/plan off")
	if got := h.session("c").RequestedBy; got != "" {
		t.Errorf("after /plan off RequestedBy = %q, want empty", got)
	}

	// The agent entering plan mode in a turn bob's message started: bob asked.
	h.model.push(sessionID("d"), calls(call("enter_plan_mode", map[string]any{})), calls(propose("Tests", "First step", "Second step")))
	h.say("d", "bob", "please plan the tests")
	s := h.session("d")
	if s.Phase != core.PhaseAwaitingApproval || s.RequestedBy != "terminal:bob" {
		t.Fatalf("phase %s, RequestedBy %q; want awaiting_approval, terminal:bob", s.Phase, s.RequestedBy)
	}
	if p := h.plan(s.PlanID); p.RequestedBy != "terminal:bob" {
		t.Errorf("plan RequestedBy = %q, want terminal:bob", p.RequestedBy)
	}
}

func twoOfThree(c *core.Config) {
	c.Approvers = []string{"terminal:local"}
	c.Policies = []core.Policy{{Match: core.PolicyMatch{Channel: "terminal", Chat: "prod"},
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
	if v2.Version != 2 || len(v2.Approvals) != 0 || v2.RequestedBy != "terminal:alice" {
		t.Fatalf("v2: version %d, approvals %+v, requested by %q", v2.Version, v2.Approvals, v2.RequestedBy)
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
	h := newHarness(t, twoOfThree, func(c *core.Config) {
		c.AutoApproveRules = []core.ApproveRule{{Name: "all", Paths: []string{"**"}}}
	})
	h.say("prod", "alice", "/plan on")
	mustContain(t, lastText(h.say("prod", "bob", "/plan auto")), "Auto-approve is not available in this conversation: its approval policy (access.policies) needs 2 approvals from different people.")
	h.setAuto("prod", true)
	h.model.push(sessionID("prod"), calls(proposeScoped("Deploy", []string{"docs/**"}, "First step", "Second step")))
	got := joinTexts(h.say("prod", "alice", "go on"))
	mustContain(t, got, "Needs 2 approvals from different people, not from whoever asked for it.")
	if s := h.session("prod"); s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("phase %s, want awaiting_approval: neither the flag nor the rule may accept here", s.Phase)
	}
}

// The person who wrote an edited version may not accept it when the requester may not.
func TestEditorRefusedUnderPolicy(t *testing.T) {
	s, cur := fixture(core.PhaseAwaitingApproval, core.TrigAccept)
	cur.EditedBy, cur.RequestedBy = "terminal:bob", "terminal:carol"
	in := input(core.TrigAccept)
	in.Actor, in.Name, in.Requester = core.PersonActor("bob"), "bob", "terminal:bob"
	in.Rules.Policies = []core.Policy{{Required: 1}}
	o, err := core.Apply(s, cur, core.TrigAccept, in)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Refused() || !strings.Contains(o.Refusal.Text, `You edited Plan v1 "Docs"; another approver must accept it.`) || len(o.Refusal.Audit) != 1 {
		t.Fatalf("the editor's accept: refusal %+v", o.Refusal)
	}
	in.Actor, in.Name, in.Requester = core.PersonActor("alice"), "alice", "terminal:alice"
	if o, err = core.Apply(s, cur, core.TrigAccept, in); err != nil || o.Refused() || o.Session.Phase != core.PhaseExecuting {
		t.Fatalf("another approver's accept: err %v, refusal %+v, phase %s", err, o.Refusal, o.Session.Phase)
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
