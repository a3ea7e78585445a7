package core_test

import (
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
