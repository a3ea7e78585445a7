package core_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// Tests that plangate tells people the truth: they assert on the store
// (plans, steps, audit kinds) and on the kind of each reply, not only on the prose.

// lastToolResult is the content of the newest tool result the model was given.
func lastToolResult(t *testing.T, h *harness) string {
	t.Helper()
	reqs := h.model.requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		ms := reqs[i].Messages
		for j := len(ms) - 1; j >= 0; j-- {
			if ms[j].Role == core.RoleTool {
				return ms[j].Content
			}
		}
	}
	t.Fatal("the model was never given a tool result")
	return ""
}

var errModelDown = errors.New("endpoint down (503)")

func countKind(kinds []core.EventKind, k core.EventKind) int {
	n := 0
	for _, x := range kinds {
		if x == k {
			n++
		}
	}
	return n
}

// While executing, update_plan changes the status and verified criteria of the accepted
// steps only: adding, leaving out or rewording a step, or changing its criteria, is a tool
// error and the stored plan stays as accepted.
func TestUpdatePlanKeepsTheAcceptedSteps(t *testing.T) {
	tests := []struct {
		name string
		call core.ToolCall
		want string
	}{
		{"adds a step", update(stepArg{Step: "Third step", Status: "pending"}), `adds step "Third step"`},
		{"rewords a step", call("update_plan", map[string]any{"plan": []stepArg{
			{Step: "First step, differently", Status: "in_progress"}, {Step: "Second step", Status: "pending"}}}),
			`leaves out step "First step"`},
		{"leaves a step out", call("update_plan", map[string]any{"plan": []stepArg{{Step: "First step", Status: "completed"}}}),
			`leaves out step "Second step" (list every step, or use merge: true)`},
		{"adds a criterion", update(stepArg{Step: "First step", Status: "in_progress", AcceptanceCriteria: []string{"looks fine"}}),
			`changes the acceptance criteria of step "First step"`},
		{"explanation with a bidi override", call("update_plan", map[string]any{"plan": []stepArg{{Step: "First step", Status: "cancelled"}},
			"merge": true, "explanation": "not needed\u202e"}), "explanation contains the invisible or control character U+202E (RIGHT-TO-LEFT OVERRIDE)"},
		{"explanation too long", call("update_plan", map[string]any{"plan": []stepArg{{Step: "First step", Status: "cancelled"}},
			"merge": true, "explanation": strings.Repeat("x", plan.MaxFieldLen+1)}), "explanation is 2001 characters long"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			p := h.toExecuting("main", "Frozen")
			before := h.events("main")
			h.model.push(sessionID("main"), calls(tc.call), text("stopping"))
			rs := h.say("main", "local", "continue")
			got := lastToolResult(t, h)
			if !strings.HasPrefix(got, "error: ") || !strings.Contains(got, tc.want) {
				t.Fatalf("tool result %q, want an error with %q", got, tc.want)
			}
			stored := h.plan(p.ID)
			if stored.Status != core.PlanAccepted || len(stored.Body.Steps) != 2 ||
				stored.Body.Steps[0].Text != "First step" || stored.Body.Steps[1].Text != "Second step" ||
				stored.Body.Steps[0].Status != plan.StepPending || len(stored.Body.Steps[0].AcceptanceCriteria) != 0 {
				t.Fatalf("stored plan changed: %+v", stored)
			}
			if n := countKind(h.events("main"), core.EventStepUpdated); n != countKind(before, core.EventStepUpdated) {
				t.Fatalf("a refused update was recorded: %v", h.events("main"))
			}
			for _, r := range rs {
				if r.Kind == core.ReplyProgress {
					t.Fatalf("a refused update posted a checklist: %+v", r)
				}
			}
		})
	}
	t.Run("a step's case is the accepted one", func(t *testing.T) {
		h := newHarness(t)
		p := h.toExecuting("main", "Frozen")
		h.model.push(sessionID("main"), calls(call("update_plan", map[string]any{"plan": []stepArg{
			{Step: "second step", Status: "in_progress"}, {Step: "FIRST STEP", Status: "completed"}}})), text("on it"))
		h.say("main", "local", "continue")
		st := h.plan(p.ID).Body.Steps
		if len(st) != 2 || st[0].Text != "First step" || st[0].Status != plan.StepCompleted ||
			st[1].Text != "Second step" || st[1].Status != plan.StepInProgress {
			t.Fatalf("steps %+v, want the accepted order and wording with the new statuses", st)
		}
	})
}

// A plan whose steps were partly cancelled does not end as "Done: 2 of 2": the message
// says how many were completed, how many cancelled, and why.
func TestCancelledStepsAreNotDone(t *testing.T) {
	h := newHarness(t)
	p := h.toExecuting("main", "Partly")
	h.model.push(sessionID("main"),
		calls(call("update_plan", map[string]any{"merge": true, "explanation": "the user dropped it",
			"plan": []stepArg{{Step: "First step", Status: "completed"}, {Step: "Second step", Status: "cancelled"}}})),
		text("summary"))
	rs := h.say("main", "local", "continue")
	stored := h.plan(p.ID)
	if stored.Status != core.PlanCompleted || stored.Body.Steps[1].Status != plan.StepCancelled ||
		stored.Body.Steps[1].CancelReason != "the user dropped it" || stored.Body.Steps[0].CancelReason != "" {
		t.Fatalf("stored plan %+v", stored)
	}
	if s := h.session("main"); s.Phase != core.PhaseOff {
		t.Fatalf("phase %s, want off", s.Phase)
	}
	var progress, done []core.Reply
	for _, r := range rs {
		switch {
		case r.Kind == core.ReplyProgress:
			progress = append(progress, r)
		case r.Kind == core.ReplyText && strings.Contains(r.Text, "completed"):
			done = append(done, r)
		}
	}
	if len(progress) != 1 || !strings.HasPrefix(progress[0].Text, `Plan v1 — Partly: 1 of 2 steps done, 1 cancelled`) {
		t.Fatalf("checklist %+v", progress)
	}
	want := `Finished plan v1: 1 of 2 steps completed, 1 cancelled ("Second step": the user dropped it). Plan v1 completed.`
	if len(done) != 1 || done[0].Text != want {
		t.Fatalf("completion replies %+v, want %q", done, want)
	}
	for _, r := range rs {
		if strings.Contains(r.Text, "Done: 2 of 2") {
			t.Fatalf("a partly cancelled plan was reported done: %q", r.Text)
		}
	}
	mustContain(t, lastText(h.say("main", "local", "/plan status")), "(completed, 1/2 steps done, 1 cancelled)")
	if ev := h.events("main"); countKind(ev, core.EventCompleted) != 1 {
		t.Fatalf("events %v", ev)
	}
}

// Auto-approve never chains: a plan proposed in a turn that followed the agent's own
// turn (here, after [PLAN_COMPLETE]) waits for a person, and the reply says so.
func TestAutoApproveNeverChains(t *testing.T) {
	h := newHarness(t)
	h.say("main", "local", "/plan auto on")
	h.say("main", "local", "/plan on")
	h.model.push(sessionID("main"),
		calls(propose("First", "Only step")), // auto-approved: a person's message started this turn
		calls(update(stepArg{Step: "Only step", Status: "completed"})),
		calls(call("enter_plan_mode", map[string]any{})), // the turn after [PLAN_COMPLETE]
		calls(propose("Second", "Another step")))
	rs := h.say("main", "local", "do the work")

	plans := h.plans("main")
	if len(plans) != 2 || plans[0].Status != core.PlanCompleted || plans[1].Status != core.PlanPending {
		t.Fatalf("plans %+v, want v1 completed and v2 pending", plans)
	}
	if s := h.session("main"); s.Phase != core.PhaseAwaitingApproval || !s.AutoApprove || s.ApprovalID == "" {
		t.Fatalf("session %+v, want v2 awaiting a person's decision", s)
	}
	if n := countKind(h.events("main"), core.EventAutoAccepted); n != 1 {
		t.Fatalf("%d auto_accepted rows, want 1 (v1 only): %v", n, h.events("main"))
	}
	var v2 *core.Reply
	for i, r := range rs {
		if r.Kind == core.ReplyPlan && strings.HasPrefix(r.Text, "Plan v2") {
			v2 = &rs[i]
		}
	}
	if v2 == nil || len(v2.Buttons) == 0 {
		t.Fatalf("no plan reply with buttons for v2 in %+v", rs)
	}
	mustContain(t, v2.Text, "Not auto-approved", "no person's message started this turn", "/plan accept")
	tr, err := h.st.Transcript(t.Context(), sessionID("main"), 1)
	if err != nil || len(tr) != 1 || tr[0].Role != core.RoleTool || tr[0].Name != "exit_plan_mode" {
		t.Fatalf("last transcript entry %+v, %v", tr, err)
	}
	mustContain(t, tr[0].Content, "Auto-approve did not take it")

	// A person's accept still works as usual.
	h.say("main", "local", "/plan accept")
	if p := h.plan(plans[1].ID); p.Status != core.PlanAccepted {
		t.Fatalf("v2 after accept: %s", p.Status)
	}
}

// A restarted process that resumes an unanswered message is no person's message either.
func TestAutoApproveNotOnResume(t *testing.T) {
	h := newHarness(t)
	h.say("main", "local", "/plan auto on")
	h.say("main", "local", "/plan on")
	h.model.push(sessionID("main"), step{err: errModelDown})
	h.say("main", "local", "tidy up") // stored, never answered
	h.restart()
	h.model.push(sessionID("main"), calls(propose("Resumed", "Only step")))
	if _, err := h.eng.Resume(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	plans := h.plans("main")
	if len(plans) != 1 || plans[0].Status != core.PlanPending {
		t.Fatalf("plans %+v, want one pending plan", plans)
	}
	if n := countKind(h.events("main"), core.EventAutoAccepted); n != 0 {
		t.Fatalf("a resumed turn's plan was auto-approved: %v", h.events("main"))
	}
	mustContain(t, joinTexts(h.out.all()), "Not auto-approved")
}

// Every proposal says what it may change, in words; a new version says how its scope
// changed, never just "details changed".
func TestProposalsStateTheirScope(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	proposal := func(summary string, allowed ...string) core.ToolCall {
		return call("exit_plan_mode", map[string]any{"title": "Docs", "summary": summary,
			"plan": []stepArg{{Step: "Edit"}}, "scope": map[string]any{"allowed_paths": allowed}})
	}
	planReply := func(rs []core.Reply) core.Reply {
		t.Helper()
		for _, r := range rs {
			if r.Kind == core.ReplyPlan {
				return r
			}
		}
		t.Fatalf("no plan reply in %+v", rs)
		return core.Reply{}
	}
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(proposal("s", "README.md", "docs/**")))
	mustContain(t, planReply(h.say("main", "local", "go")).Text, "\nMay change: README.md, docs/**\n")

	h.model.push(sid, calls(proposal("s", "**")))
	r := planReply(h.say("main", "local", "/plan revise everything"))
	mustContain(t, r.Text, "\nMay change: the whole workspace\n", "Changes from v1: scope widened: README.md, docs/** → the whole workspace")

	h.model.push(sid, calls(proposal("s2", "**")))
	r = planReply(h.say("main", "local", "/plan revise reword"))
	mustContain(t, r.Text, "Changes from v2: same steps; changed: summary")

	h.model.push(sid, calls(proposal("s2")))
	r = planReply(h.say("main", "local", "/plan revise read only"))
	mustContain(t, r.Text, "May change: nothing (this plan names no files it may change)",
		"scope narrowed: the whole workspace → no files")
	for _, rr := range h.out.all() {
		if strings.Contains(rr.Text, "details changed") {
			t.Fatalf("a version said only %q", rr.Text)
		}
	}
	if got := len(h.plans("main")); got != 4 {
		t.Fatalf("%d plan versions, want 4", got)
	}
}

// /plan off on a plan with a cancelled step does not count the cancelled step as done.
func TestPlanOffCountsCancelledStepsApart(t *testing.T) {
	h := newHarness(t)
	p := h.toExecuting("main", "Stopped")
	h.model.push(sessionID("main"),
		calls(update(stepArg{Step: "First step", Status: "cancelled"})), text("next"))
	h.say("main", "local", "continue")
	rs := h.say("main", "local", "/plan off")
	if len(rs) != 2 || rs[0].Kind != core.ReplyDecided || rs[1].Kind != core.ReplyText {
		t.Fatalf("replies %+v, want the retired buttons and the text", rs)
	}
	mustContain(t, rs[1].Text, `Plan v1 "Stopped" was stopped with 0 of 2 steps done, 1 cancelled.`)
	if st := h.plan(p.ID); st.Status != core.PlanAborted || st.Body.Steps[0].Status != plan.StepCancelled {
		t.Fatalf("plan %+v", st)
	}
}
