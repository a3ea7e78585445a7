package storetest

import (
	"context"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// testTokens: a change's PlanTokens adds to the version's counts in the same transaction,
// also to a version the change inserts; writing the plan's row (by this change or a later
// one, with any Tokens on the value) keeps the stored counts; an addition to a plan of
// another session, or to none, fails the whole change. The session's counts round-trip
// with its row.
func testTokens(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	se := seed(t, s, "s1")
	p := fullPlan("p1", "s1", 1)
	p.Tokens = plan.Tokens{Prompt: 999} // ignored: only PlanTokens adds
	first := plan.Tokens{Prompt: 2048, Cached: 1920, Completion: 40, Calls: 2, Unreported: 1}
	next := se
	next.PlanID, next.Phase = "p1", core.PhaseExecuting
	next.Tokens = core.SessionTokens{All: first, Day: "2025-03-14", Today: first}
	se = commit(t, s, core.Change{Session: &next, Plans: []core.Plan{p}, PlanTokens: &core.PlanTokens{PlanID: "p1", Add: first}})
	if got, err := s.Plan(ctx, "p1"); err != nil || got.Tokens != first {
		t.Fatalf("tokens of the inserted plan = %+v, %v; want %+v", got.Tokens, err, first)
	}
	if got, err := s.Session(ctx, "s1"); err != nil || got.Tokens != next.Tokens {
		t.Fatalf("session tokens = %+v, %v; want %+v", got.Tokens, err, next.Tokens)
	}
	more := plan.Tokens{Prompt: 3000, Cached: 2944, Completion: 7, Calls: 1}
	p.Status, p.Tokens = core.PlanCompleted, plan.Tokens{}
	next = se
	commit(t, s, core.Change{Session: &next, Plans: []core.Plan{p}, PlanTokens: &core.PlanTokens{PlanID: "p1", Add: more}})
	want := first.Add(more)
	got, err := s.Plan(ctx, "p1")
	if err != nil || got.Tokens != want || got.Status != core.PlanCompleted {
		t.Fatalf("plan after a second addition = %+v (%s), %v; want %+v", got.Tokens, got.Status, err, want)
	}
	commit(t, s, core.Change{SessionID: "s1", Plans: []core.Plan{p}}) // a write of the row alone
	if got, err := s.Plan(ctx, "p1"); err != nil || got.Tokens != want {
		t.Fatalf("plan rewritten without an addition = %+v, %v; want %+v", got.Tokens, err, want)
	}
	other := seed(t, s, "s2")
	for name, add := range map[string]*core.PlanTokens{
		"another session's plan": {PlanID: "p1", Add: more},
		"no such plan":           {PlanID: "nope", Add: more},
	} {
		n := other
		n.LastFeedback = "changed"
		if _, err := s.Commit(ctx, core.Change{Session: &n, PlanTokens: add}); err == nil {
			t.Errorf("%s: the addition was accepted", name)
		}
		if got, _ := s.Session(ctx, "s2"); got.LastFeedback != "" {
			t.Errorf("%s: the rest of the change was kept", name)
		}
	}
	if got, _ := s.Plan(ctx, "p1"); got.Tokens != want {
		t.Errorf("a refused addition changed p1's counts to %+v", got.Tokens)
	}
}
