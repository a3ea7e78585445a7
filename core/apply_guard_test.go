package core_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// A bare "/plan accept" takes only the version that was pending when it arrived.
func TestApplyBareAcceptTakesOnlyTheSeenVersion(t *testing.T) {
	s, cur := fixture(core.PhaseAwaitingApproval, core.TrigAccept)
	in := input(core.TrigAccept)
	older := "a0"
	in.SeenApproval = &older
	o, err := core.Apply(s, cur, core.TrigAccept, in)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Refused() || o.Change.Session != nil || len(o.Change.Plans) != 0 {
		t.Fatalf("a bare accept of a version proposed after it was sent was taken: %+v", o.Change)
	}
	if len(o.Effects) != 1 || o.Effects[0].Reply.Kind != core.ReplyNotice {
		t.Fatalf("effects %v, want one notice", o.EffectKinds())
	}
	seen := cur.ApprovalID
	in.SeenApproval = &seen
	if o, err = core.Apply(s, cur, core.TrigAccept, in); err != nil || o.Refused() || o.Session.Phase != core.PhaseExecuting {
		t.Fatalf("accepting the version that was seen: refused %v, phase %s, err %v", o.Refused(), o.Session.Phase, err)
	}
}

// A button of an older version is refused with an audit row, and changes nothing else.
func TestApplyStaleButtonIsAudited(t *testing.T) {
	s, cur := fixture(core.PhaseAwaitingApproval, core.TrigAccept)
	old := *cur
	old.ID, old.Version, old.ApprovalID, old.Status = "p0", 0, "a0", core.PlanSuperseded
	cur.Version = 1
	in := input(core.TrigAccept)
	in.ApprovalID, in.Ref = "a0", &old
	o, err := core.Apply(s, cur, core.TrigAccept, in)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Refused() || o.Change.Session != nil || len(o.Change.Plans) != 0 {
		t.Fatalf("a stale button changed state: %+v", o.Change)
	}
	if len(o.Change.Events) != 1 || o.Change.Events[0].Kind != core.EventRefused || o.Change.Events[0].PlanID != "p0" ||
		o.Change.Events[0].Actor != core.PersonActor("alice") {
		t.Fatalf("audit %+v, want one refused row for p0 by alice", o.Change.Events)
	}
	foreign := old
	foreign.SessionID = "slack:T1:C1"
	in.Ref = &foreign
	if o, _ = core.Apply(s, cur, core.TrigAccept, in); !o.Refused() || len(o.Change.Events) != 0 {
		t.Fatalf("a button of another conversation: refused %v, audit %v", o.Refused(), o.Change.Events)
	}
}

// Apply is pure: it leaves its inputs as they were.
func TestApplyLeavesInputsAlone(t *testing.T) {
	for _, p := range core.Phases() {
		for _, tr := range core.Triggers() {
			s, cur := fixture(p, tr)
			s0, cur0 := s, clonePlan(cur)
			if _, err := core.Apply(s, cur, tr, input(tr)); err != nil {
				t.Fatalf("%s/%s: %v", p, tr, err)
			}
			if !reflect.DeepEqual(s, s0) || !reflect.DeepEqual(cur, cur0) {
				t.Fatalf("%s/%s: Apply changed its inputs", p, tr)
			}
		}
	}
}

func clonePlan(p *core.Plan) *core.Plan {
	if p == nil {
		return nil
	}
	c := *p
	c.Body.Steps = append([]plan.Step(nil), p.Body.Steps...)
	return &c
}

// Refusals of the guards: plan mode disabled, empty feedback, an answer that is no option.
func TestApplyGuards(t *testing.T) {
	cases := []struct {
		name  string
		phase core.Phase
		tr    core.Trigger
		edit  func(*core.Input)
	}{
		{"plan mode off", core.PhaseOff, core.TrigOn, func(in *core.Input) { in.Rules.PlanMode = false }},
		{"agent, plan mode off", core.PhaseOff, core.TrigEnter, func(in *core.Input) { in.Rules.PlanMode = false }},
		{"no feedback", core.PhaseAwaitingApproval, core.TrigRevise, func(in *core.Input) { in.Text = " " }},
		{"not an option", core.PhasePlanning, core.TrigAnswer, func(in *core.Input) { in.Text = "C" }},
		{"invalid plan", core.PhasePlanning, core.TrigPropose, func(in *core.Input) { in.Args = []byte(`{"title":"x","plan":[]}`) }},
		{"dropped step", core.PhaseExecuting, core.TrigUpdate, func(in *core.Input) {
			in.Args = []byte(`{"plan":[{"step":"First step","status":"completed"}]}`)
		}},
	}
	for _, c := range cases {
		s, cur := fixture(c.phase, c.tr)
		in := input(c.tr)
		c.edit(&in)
		o, err := core.Apply(s, cur, c.tr, in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !o.Refused() || o.Change.Session != nil {
			t.Errorf("%s: not refused (phase %s)", c.name, o.Session.Phase)
		}
	}
}

// Every trigger is guarded by the phase table, and every guard the table names is known
// to Apply (an unknown one is an error, which TestApplyTable would report).
func TestGuardTableCoversEveryTrigger(t *testing.T) {
	m := core.NewMachine()
	for _, tr := range core.Triggers() {
		gs := m.Guards(tr)
		if !slices.Contains(gs, core.GuardPhase) {
			t.Errorf("%s: guards %v do not consult the phase table", tr, gs)
		}
	}
}

// The applier runs effects in one order for every transition: the buttons of the decided
// version are retired before the decision is announced, and the agent's turn comes last.
func TestApplierOrderOnAccept(t *testing.T) {
	h := newHarness(t)
	p := h.toPending("main", "Docs")
	h.model.push(sessionID("main"), text("on it"))
	rs := h.say("main", "local", "/plan accept")
	got := replyKinds(rs)
	want := []core.ReplyKind{core.ReplyDecided, core.ReplyText, core.ReplyText}
	if !slices.Equal(got, want) || rs[0].Ref != p.ApprovalID || rs[2].Text != "on it" {
		t.Fatalf("replies %v (%q), want %v: retire, announce, then the agent", got, joinTexts(rs), want)
	}
	if s := h.session("main"); s.Phase != core.PhaseExecuting || len(s.Injections) != 0 || h.plan(p.ID).Status != core.PlanAccepted {
		t.Fatalf("after accept: phase %s, %d injections queued, plan %s", s.Phase, len(s.Injections), h.plan(p.ID).Status)
	}
}

// A session awaiting approval whose plan row is already decided was read around another
// process's decision (a store read that is not one snapshot): every decision on it is the
// conflict the compare-and-set would report, never a refusal computed on that state — the
// approval counter would otherwise answer "you already approved plan v1" to the loser.
func TestApplyDecisionOnTornReadIsConflict(t *testing.T) {
	for _, tr := range []core.Trigger{core.TrigAccept, core.TrigApprove, core.TrigRevise} {
		s, cur := fixture(core.PhaseAwaitingApproval, tr)
		in := input(tr)
		cur.Status = core.PlanAccepted
		in.Requester = "terminal:alice"
		cur.Approvals = []plan.Approval{{By: in.Requester, Version: cur.Version}}
		in.ApprovalID = cur.ApprovalID
		o, err := core.Apply(s, cur, tr, in)
		if !errors.Is(err, core.ErrConflict) {
			t.Errorf("%s: err %v, refusal %+v; want ErrConflict", tr, err, o.Refusal)
		}
	}
}
