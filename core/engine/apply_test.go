package engine_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// want is one row of docs/design.md §3 as Apply answers it.
type want struct {
	refused bool
	benign  bool // a refused agent call that is no error for the model
	noop    bool // not refused, but nothing changes (a stale timer, draft steps)
	phase   core.Phase
	cur     core.PlanStatus // status of the current plan afterwards ("" = none or unchanged)
	created core.PlanStatus // status of a version the transition creates ("" = none)
	audit   []core.EventKind
	effects []machine.EffectKind
}

const (
	wf = machine.EffWriteFile
	rf = machine.EffRefreshFile
	nc = machine.EffNudgesChanged
	rt = machine.EffRetire
	ap = machine.EffApprovals
	pg = machine.EffProgress
	fg = machine.EffForget
	sy = machine.EffSay
	rp = machine.EffReport
	tu = machine.EffRunTurn
)

func ev(ks ...core.EventKind) []core.EventKind         { return ks }
func fx(ks ...machine.EffectKind) []machine.EffectKind { return ks }

var refused = want{refused: true}

// table is docs/design.md §3: every (phase, trigger) pair. Refused person commands
// answer with a notice; refused agent calls are tool errors and say nothing in the chat.
var table = map[core.Phase]map[machine.Trigger]want{
	core.PhaseOff: {
		machine.TrigOn:          {phase: core.PhasePlanning, audit: ev(core.EventEntered), effects: fx(sy, tu)},
		machine.TrigEnter:       {phase: core.PhasePlanning, audit: ev(core.EventEntered), effects: fx(sy)},
		machine.TrigPropose:     refused,
		machine.TrigAutoPropose: refused,
		machine.TrigAccept:      refused,
		machine.TrigApprove:     refused,
		machine.TrigRevise:      refused,
		machine.TrigAsk:         refused,
		machine.TrigAnswer:      refused,
		machine.TrigAutoOn:      {phase: core.PhaseOff, audit: ev(core.EventAutoChanged), effects: fx(sy)},
		machine.TrigAutoOff:     {phase: core.PhaseOff, audit: ev(core.EventAutoChanged), effects: fx(sy)},
		machine.TrigOff:         refused,
		machine.TrigExpire:      {noop: true},
		machine.TrigUpdate:      refused,
		machine.TrigComplete:    refused,
		machine.TrigEdit:        refused,
		machine.TrigComment:     refused,
	},
	core.PhasePlanning: {
		machine.TrigOn:          refused,
		machine.TrigEnter:       {refused: true, benign: true},
		machine.TrigPropose:     {phase: core.PhaseAwaitingApproval, created: core.PlanPending, audit: ev(core.EventProposed), effects: fx(wf, nc, sy)},
		machine.TrigAutoPropose: {phase: core.PhaseExecuting, created: core.PlanAccepted, audit: ev(core.EventProposed, core.EventAutoAccepted), effects: fx(wf, nc, sy)},
		machine.TrigAccept:      refused,
		machine.TrigApprove:     refused,
		machine.TrigRevise:      refused,
		machine.TrigAsk:         {phase: core.PhasePlanning, audit: ev(core.EventAsked), effects: fx(nc, sy)},
		machine.TrigAnswer:      {phase: core.PhasePlanning, audit: ev(core.EventAnswered), effects: fx(nc, sy, tu)},
		machine.TrigAutoOn:      {phase: core.PhasePlanning, audit: ev(core.EventAutoChanged), effects: fx(sy)},
		machine.TrigAutoOff:     {phase: core.PhasePlanning, audit: ev(core.EventAutoChanged), effects: fx(sy)},
		machine.TrigOff:         {phase: core.PhaseOff, audit: ev(core.EventExited), effects: fx(nc, sy)},
		machine.TrigExpire:      {noop: true},
		machine.TrigUpdate:      {noop: true},                  // draft steps: "Noted"
		machine.TrigComplete:    {refused: true, benign: true}, // "Noted": drafts cannot complete
		machine.TrigEdit:        refused,
		machine.TrigComment:     refused,
	},
	core.PhaseAwaitingApproval: {
		machine.TrigOn:    refused,
		machine.TrigEnter: {refused: true, benign: true},
		machine.TrigPropose: {phase: core.PhaseAwaitingApproval, cur: core.PlanSuperseded, created: core.PlanPending,
			audit: ev(core.EventSuperseded, core.EventProposed), effects: fx(wf, rf, nc, rt, sy)},
		machine.TrigAutoPropose: {phase: core.PhaseExecuting, cur: core.PlanSuperseded, created: core.PlanAccepted,
			audit: ev(core.EventSuperseded, core.EventProposed, core.EventAutoAccepted), effects: fx(wf, rf, nc, rt, sy)},
		machine.TrigAccept: {phase: core.PhaseExecuting, cur: core.PlanAccepted, audit: ev(core.EventAccepted), effects: fx(rf, nc, rt, sy, tu)},
		// One of two approvals: the version stays pending and keeps its buttons.
		machine.TrigApprove: {phase: core.PhaseAwaitingApproval, cur: core.PlanPending, audit: ev(core.EventApprovalRecorded), effects: fx(rf, ap, sy)},
		machine.TrigRevise:  {phase: core.PhasePlanning, cur: core.PlanRevised, audit: ev(core.EventRevised), effects: fx(rf, nc, rt, fg, sy, tu)},
		machine.TrigAsk:     refused,
		machine.TrigAnswer:  refused,
		machine.TrigAutoOn: {phase: core.PhaseExecuting, cur: core.PlanAccepted, audit: ev(core.EventAutoChanged, core.EventAutoAccepted),
			effects: fx(rf, nc, rt, sy, tu)},
		machine.TrigAutoOff:  {phase: core.PhaseAwaitingApproval, audit: ev(core.EventAutoChanged), effects: fx(sy)},
		machine.TrigOff:      {phase: core.PhaseOff, cur: core.PlanAbandoned, audit: ev(core.EventAbandoned), effects: fx(rf, nc, rt, fg, sy)},
		machine.TrigExpire:   {phase: core.PhasePlanning, cur: core.PlanExpired, audit: ev(core.EventExpired), effects: fx(rf, nc, rt, sy)},
		machine.TrigUpdate:   refused,
		machine.TrigComplete: refused,
		machine.TrigEdit: {phase: core.PhaseAwaitingApproval, cur: core.PlanSuperseded, created: core.PlanPending,
			audit: ev(core.EventSuperseded, core.EventProposed), effects: fx(wf, rf, nc, rt, sy)},
		// A comment waits on the pending version; its buttons' message shows it.
		machine.TrigComment: {phase: core.PhaseAwaitingApproval, cur: core.PlanPending, audit: ev(core.EventCommented), effects: fx(rf, ap, sy)},
	},
	core.PhaseExecuting: {
		machine.TrigOn:          refused,
		machine.TrigEnter:       {refused: true, benign: true},
		machine.TrigPropose:     refused,
		machine.TrigAutoPropose: refused,
		machine.TrigAccept:      refused,
		machine.TrigApprove:     refused,
		machine.TrigRevise:      {phase: core.PhasePlanning, cur: core.PlanRevised, audit: ev(core.EventRevised), effects: fx(rf, nc, rt, fg, sy, tu)},
		machine.TrigAsk:         {phase: core.PhaseExecuting, cur: core.PlanAccepted, audit: ev(core.EventAsked, core.EventStopped), effects: fx(rf, nc, sy)},
		machine.TrigAnswer:      {phase: core.PhaseExecuting, audit: ev(core.EventAnswered), effects: fx(nc, sy, tu)},
		machine.TrigAutoOn:      {phase: core.PhaseExecuting, audit: ev(core.EventAutoChanged), effects: fx(sy)},
		machine.TrigAutoOff:     {phase: core.PhaseExecuting, audit: ev(core.EventAutoChanged), effects: fx(sy)},
		machine.TrigOff:         {phase: core.PhaseOff, cur: core.PlanAborted, audit: ev(core.EventAborted), effects: fx(rf, nc, rt, fg, sy)},
		machine.TrigExpire:      {noop: true},
		machine.TrigUpdate:      {phase: core.PhaseExecuting, cur: core.PlanAccepted, audit: ev(core.EventStepUpdated), effects: fx(rf, pg)},
		machine.TrigComplete: {phase: core.PhaseOff, cur: core.PlanCompleted, audit: ev(core.EventStepUpdated, core.EventCompleted),
			effects: fx(rf, nc, pg, fg, sy, rp)},
		machine.TrigEdit:    refused,
		machine.TrigComment: refused,
	},
}

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// fixture is a stored session in phase p (and its current plan), as the engine would
// hand it to Apply for trigger tr.
func fixture(p core.Phase, tr machine.Trigger) (core.Session, *core.Plan) {
	s := core.Session{ID: "terminal:local:main", Address: core.Address{Channel: "terminal", Account: "local", Chat: "main"},
		Phase: p, Owner: "alice", Version: 3, CreatedAt: t0, UpdatedAt: t0,
		AutoApprove: tr == machine.TrigAutoPropose || tr == machine.TrigAutoOff}
	if tr == machine.TrigAnswer && (p == core.PhasePlanning || p == core.PhaseExecuting) {
		s.Question = &core.Question{ID: "q1", Text: "Which?", Options: []string{"A", "B"}, AskedAt: t0}
	}
	var pl *core.Plan
	switch p {
	case core.PhaseAwaitingApproval, core.PhaseExecuting:
		pl = &core.Plan{ID: "p1", SessionID: s.ID, Version: 1, Status: core.PlanPending, ApprovalID: "a1", File: "plans/main/v1.md",
			Body:      plan.Body{Title: "Docs", Steps: []plan.Step{{ID: "1", Text: "First step", Status: plan.StepPending}, {ID: "2", Text: "Second step", Status: plan.StepPending}}},
			CreatedAt: t0}
		s.PlanID = pl.ID
		if p == core.PhaseAwaitingApproval {
			s.ApprovalID = pl.ApprovalID
		} else {
			pl.Status = core.PlanAccepted
		}
	}
	return s, pl
}

func args(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// input is what the engine passes with trigger tr: who, the clock, and what it carries.
func input(tr machine.Trigger) machine.Input {
	in := machine.Input{Now: t0.Add(time.Hour), Actor: core.PersonActor("alice"), Name: "alice",
		Rules: machine.Rules{PlanMode: true, Nudges: []time.Duration{time.Hour}, PlansDir: "plans"},
		IDs:   machine.NewIDs{Plan: "p2", Approval: "a2", Question: "q2"}}
	switch tr {
	case machine.TrigOn:
		in.Text = "tidy the docs"
	case machine.TrigRevise:
		in.Text = "tighten the scope"
	case machine.TrigAnswer:
		in.Text = "1"
	case machine.TrigComment:
		in.Text, in.Steps = "use the v2 API", []int{2}
	case machine.TrigExpire:
		in.Actor, in.Name, in.PlanID, in.Spec = core.SystemActor, "", "p1", "1h"
	case machine.TrigApprove:
		in.Rules.Policies = []machine.Policy{{Required: 2, RequesterMayApprove: true}}
	case machine.TrigEnter, machine.TrigPropose, machine.TrigAutoPropose, machine.TrigAsk, machine.TrigUpdate, machine.TrigComplete:
		in.Actor, in.Name = core.AgentActor, ""
	}
	switch tr {
	case machine.TrigPropose, machine.TrigAutoPropose:
		in.Args = args(map[string]any{"title": "Another plan", "plan": []map[string]any{{"step": "Only step"}}})
	case machine.TrigAsk:
		in.Args = args(map[string]any{"question": "Which?", "options": []string{"A", "B"}})
	case machine.TrigUpdate:
		in.Args = args(map[string]any{"plan": []map[string]any{{"step": "First step", "status": "in_progress"}}, "merge": true})
	case machine.TrigComplete:
		in.Args = args(map[string]any{"plan": []map[string]any{{"step": "First step", "status": "completed"}, {"step": "Second step", "status": "cancelled"}}})
	case machine.TrigEdit:
		_, cur := fixture(core.PhaseAwaitingApproval, tr)
		file := strings.Replace(string(machine.RenderPlanMarkdown(*cur, core.PhaseAwaitingApproval, "main", machine.Reach{})),
			"- [ ] Second step\n", "- [ ] Second step\n- [ ] Third step\n", 1)
		in.Files = []core.File{{Name: "v1.md", MIME: "text/markdown", Data: []byte(file)}}
	}
	return in
}

func kinds(evs []core.Event) []core.EventKind {
	var out []core.EventKind
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

// TestApplyTable is docs/design.md §3 as a table over Apply alone: for every phase and
// trigger, the next phase, the plan statuses, the audit rows and the effects, or a refusal
// that changes nothing.
func TestApplyTable(t *testing.T) {
	m := machine.NewMachine()
	for _, p := range machine.Phases() {
		for _, tr := range machine.Triggers() {
			t.Run(fmt.Sprintf("%s/%s", p, tr), func(t *testing.T) {
				w, ok := table[p][tr]
				if !ok {
					t.Fatal("no row in the table")
				}
				s, cur := fixture(p, tr)
				o, err := machine.Apply(s, cur, tr, input(tr))
				if err != nil {
					t.Fatal(err)
				}
				checkRow(t, m, s, cur, tr, w, o)
			})
		}
	}
}

func checkRow(t *testing.T, m machine.Machine, s core.Session, cur *core.Plan, tr machine.Trigger, w want, o machine.Outcome) {
	t.Helper()
	if o.Refused() != w.refused {
		t.Fatalf("refused = %v, want %v (refusal %+v, effects %v)", o.Refused(), w.refused, o.Refusal, o.EffectKinds())
	}
	agent := o.Tool != nil
	if w.refused || w.noop {
		if o.Change.Session != nil || len(o.Change.Plans) > 0 || o.Session.Phase != s.Phase {
			t.Fatalf("a refusal or no-op changed state: %+v", o.Change)
		}
		if w.refused && agent {
			isErr := len(o.Tool.Content) > 6 && o.Tool.Content[:6] == "error:"
			if isErr == w.benign || len(o.Effects) > 0 {
				t.Fatalf("refused agent call: tool %q, effects %v", o.Tool.Content, o.EffectKinds())
			}
		}
		if w.refused && !agent && (len(o.Effects) != 1 || o.Effects[0].Reply.Kind != core.ReplyNotice) {
			t.Fatalf("a refused command must answer with one notice, got %v", o.EffectKinds())
		}
		if w.noop && (len(o.Effects) > 0 || len(o.Change.Events) > 0) {
			t.Fatalf("no-op has effects %v / audit %v", o.EffectKinds(), kinds(o.Change.Events))
		}
		return
	}
	if o.Session.Phase != w.phase {
		t.Errorf("phase %s, want %s", o.Session.Phase, w.phase)
	}
	if next, ok := m.Next(s.Phase, o.Trigger); !ok || next != o.Session.Phase {
		t.Errorf("Apply went to %s, the phase table says %s (%v)", o.Session.Phase, next, ok)
	}
	if o.Change.Session == nil || !reflect.DeepEqual(*o.Change.Session, o.Session) {
		t.Errorf("the change does not carry the next session")
	}
	if got := kinds(o.Change.Events); !slices.Equal(got, w.audit) {
		t.Errorf("audit %v, want %v", got, w.audit)
	}
	if got := o.EffectKinds(); !slices.Equal(got, w.effects) {
		t.Errorf("effects %v, want %v", got, w.effects)
	}
	checkPlans(t, cur, w, o)
}

func checkPlans(t *testing.T, cur *core.Plan, w want, o machine.Outcome) {
	t.Helper()
	var gotCur, gotNew core.PlanStatus
	for _, p := range o.Change.Plans {
		switch {
		case cur != nil && p.ID == cur.ID:
			gotCur = p.Status
		default:
			gotNew = p.Status
			if p.ID != "p2" || p.ApprovalID != "a2" || p.File == "" {
				t.Errorf("new version %s (approval %s, file %q): not made from the given ids", p.ID, p.ApprovalID, p.File)
			}
		}
	}
	if gotCur != w.cur || gotNew != w.created {
		t.Errorf("plan statuses: current %q, created %q; want %q, %q", gotCur, gotNew, w.cur, w.created)
	}
	for _, st := range []core.PlanStatus{gotCur, gotNew} {
		if st == "" {
			continue
		}
		from := core.PlanStatus("")
		if st == gotCur {
			from = cur.Status
		}
		if to, ok := machine.NewMachine().PlanNext(from, o.Trigger); !ok || to != st {
			t.Errorf("plan %s -> %s on %s is not in the plan-status table", from, st, o.Trigger)
		}
	}
}

// The person who wrote an edited version may not accept it when the requester may not.
func TestEditorRefusedUnderPolicy(t *testing.T) {
	s, cur := fixture(core.PhaseAwaitingApproval, machine.TrigAccept)
	cur.EditedBy, cur.Requesters = "terminal:bob", []core.Requester{{By: "terminal:carol"}}
	in := input(machine.TrigAccept)
	in.Actor, in.Name, in.Requester = core.PersonActor("bob"), "bob", "terminal:bob"
	in.Rules.Policies = []machine.Policy{{Required: 1}}
	o, err := machine.Apply(s, cur, machine.TrigAccept, in)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Refused() || !strings.Contains(o.Refusal.Text, `You edited Plan v1 "Docs"; another approver must accept it.`) || len(o.Refusal.Audit) != 1 {
		t.Fatalf("the editor's accept: refusal %+v", o.Refusal)
	}
	in.Actor, in.Name, in.Requester = core.PersonActor("alice"), "alice", "terminal:alice"
	if o, err = machine.Apply(s, cur, machine.TrigAccept, in); err != nil || o.Refused() || o.Session.Phase != core.PhaseExecuting {
		t.Fatalf("another approver's accept: err %v, refusal %+v, phase %s", err, o.Refusal, o.Session.Phase)
	}
}
