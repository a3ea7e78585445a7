package engine_test

import (
	"context"
	"testing"

	"github.com/plangate/plangate/core"
)

// TestRedTeamEditorAcceptsOwnEditNextVersion: under requester_may_approve: false the
// editor of a version may not accept it, but the version the agent proposes after it
// carries the edit and names nobody as its editor. alice (an approver) edits carol's plan
// to add a step of her own; carol asks the agent to propose it again; the agent keeps
// alice's step, adds one, and alice alone accepts a plan holding her own edit.
func TestRedTeamEditorAcceptsOwnEditNextVersion(t *testing.T) {
	h := newHarness(t, onlyOtherDecides)
	h.say("prod", "bob", "/plan on")
	h.model.push(sessionID("prod"), calls(propose("Deploy", "First step", "Second step")))
	h.say("prod", "carol", "deploy the new release")
	h.sayFiles("prod", "alice", "/plan edit", editedCopy(t, h, "prod", "- [ ] Open port 22 to the world"))
	v2 := h.plan(h.session("prod").PlanID)
	if v2.Version != 2 || v2.EditedBy != "terminal:alice" {
		t.Fatalf("setup: v%d edited by %q; replies:\n%s", v2.Version, v2.EditedBy, joinTexts(h.out.all()))
	}
	h.model.push(sessionID("prod"), calls(propose("Deploy", "First step", "Second step", "Open port 22 to the world", "Smoke test")))
	h.say("prod", "carol", "looks right, add a smoke test and propose it again")
	v3 := h.plan(h.session("prod").PlanID)
	if v3.Version != 3 {
		t.Fatalf("setup: v%d pending, want v3; replies:\n%s", v3.Version, joinTexts(h.out.all()))
	}
	h.say("prod", "alice", "/plan accept")
	if p := h.plan(v3.ID); p.Status != core.PlanPending || len(p.Approvals) != 0 || p.Decision != nil {
		t.Errorf("alice, who wrote v2's step into v3, accepted v3 alone: stored %s, approvals %+v, decision %+v; want pending", p.Status, p.Approvals, p.Decision)
	}
}

// TestRedTeamAnswerByButtonMakesARequester: a question answered with its button (not a
// typed message) makes the person who answered one of the next version's requesters, so
// under requester_may_approve: false they may not accept it alone.
func TestRedTeamAnswerByButtonMakesARequester(t *testing.T) {
	h := newHarness(t, onlyOtherDecides)
	h.say("prod", "bob", "/plan on")
	h.model.push(sessionID("prod"), calls(call("ask_user_question", map[string]any{"question": "Which region?", "options": []string{"eu", "us"}})))
	h.say("prod", "carol", "deploy the new release")
	q := h.session("prod").Question
	if q == nil {
		t.Fatalf("setup: no question; replies:\n%s", joinTexts(h.out.all()))
	}
	h.model.push(sessionID("prod"), calls(propose("Deploy to eu", "First step", "Second step")))
	h.click("prod", "alice", core.Action{Kind: core.ActionAnswer, ApprovalID: q.ID, Value: "eu"})
	s := h.session("prod")
	if s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("setup: phase %s; replies:\n%s", s.Phase, joinTexts(h.out.all()))
	}
	h.say("prod", "alice", "/plan accept")
	if p := h.plan(s.PlanID); p.Status != core.PlanPending || len(p.Approvals) != 0 {
		t.Errorf("alice answered the question by button and accepted the plan alone: %s, approvals %+v", p.Status, p.Approvals)
	}
}

// TestRedTeamRequestLeftToAnotherReplica: with plan mode off, bob's message starts a turn
// on process A; meanwhile alice's request reaches process B, which stores it and leaves it
// to A (A holds the lease). A's next turn answers alice's message, but its requesters are
// those of the job it runs for, bob's message: the agent enters plan mode and proposes, and
// alice alone accepts the plan for her own request under requester_may_approve: false.
func TestRedTeamRequestLeftToAnotherReplica(t *testing.T) {
	h := newHarness(t, onlyOtherDecides)
	a := h.process(nil, nil, nil)
	entered, release := a.holdFirstCall()
	sid := sessionID("prod")
	a.model.push(sid, text("Hello bob."), calls(call("enter_plan_mode", map[string]any{})), calls(propose("Deploy", "First step", "Second step")))
	msg := func(id, who, text string) core.Message {
		return core.Message{ID: id, Address: addr("prod"), Sender: core.Person{ID: who, Name: who}, Text: text, Time: h.clock}
	}
	done := a.eng.Enqueue(context.Background(), msg("ev-1", "bob", "hello"))
	<-entered
	b := h.process(nil, nil, nil)
	if err := b.eng.Handle(context.Background(), msg("ev-2", "alice", "deploy the new release to prod")); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s := h.session("prod")
	if s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("setup: phase %s; A said %s; log %s", s.Phase, joinTexts(a.out.all()), a.log)
	}
	answered := false
	if reqs := a.model.requests(); len(reqs) > 1 {
		for _, m := range reqs[1].Messages {
			answered = answered || m.Role == core.RoleUser && m.Content == "deploy the new release to prod"
		}
	}
	if !answered {
		t.Fatalf("setup: A's second turn did not get alice's message")
	}
	p := h.plan(s.PlanID)
	if !isRequesterOf(p, "terminal:alice") {
		t.Errorf("the plan answering alice's request names requesters %q, not alice", requesterIDs(p.Requesters))
	}
	if err := b.eng.Handle(context.Background(), msg("ev-3", "alice", "/plan accept")); err != nil {
		t.Fatal(err)
	}
	if got := h.plan(p.ID); got.Status != core.PlanPending || len(got.Approvals) != 0 {
		t.Errorf("alice accepted the plan for her own request alone: %s, approvals %+v", got.Status, got.Approvals)
	}
}

func isRequesterOf(p core.Plan, by string) bool {
	for _, r := range p.Requesters {
		if r.By == by {
			return true
		}
	}
	return false
}
