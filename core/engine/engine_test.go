package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
)

func TestFullCycle(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	mustContain(t, joinTexts(h.say("main", "local", "/plan on")), "Plan mode is on")

	h.model.push(sid, calls(propose("Docs cleanup", "Reword intro", "Fix links")))
	rs := h.say("main", "local", "tidy the docs")
	plan := h.plan(h.session("main").PlanID)
	if plan.Version != 1 || plan.Status != core.PlanPending || plan.ApprovalID == "" {
		t.Fatalf("v1 = %+v", plan)
	}
	if len(plan.ApprovalID) > 40 {
		t.Errorf("approval id %q is too long for Telegram callback data", plan.ApprovalID)
	}
	r := rs[len(rs)-1]
	if r.Kind != core.ReplyPlan || len(r.Attachments) != 1 || len(r.Buttons) != 3 {
		t.Fatalf("plan reply = %+v", r)
	}
	mustContain(t, r.Text, "Plan v1 — Docs cleanup (2 steps)", "/plan accept")
	if r.Buttons[0].Action.ApprovalID != plan.ApprovalID {
		t.Errorf("Accept button carries %q, want %q", r.Buttons[0].Action.ApprovalID, plan.ApprovalID)
	}
	data, err := os.ReadFile(r.Attachments[0].Path)
	if err != nil {
		t.Fatalf("plan file: %v", err)
	}
	mustContain(t, string(data), "# Docs cleanup", "- [ ] Reword intro")
	if want := filepath.Join(h.cfg.PlansDir, "main", "plan-2026-11-30-docs-cleanup-v1.md"); r.Attachments[0].Path != want {
		t.Errorf("plan file at %s, want %s", r.Attachments[0].Path, want)
	}

	h.model.push(sid, calls(propose("Docs cleanup with typos", "Reword intro", "Fix links", "Fix typos")))
	rs = h.say("main", "local", "/plan revise also fix typos")
	mustContain(t, joinTexts(rs), "Sent plan v1 back for revision (1st time)", "Plan v2", "Changes from v1: + Fix typos")
	// The model saw the rejection with the feedback.
	reqs := h.model.requests()
	mustContain(t, lastUser(reqs[len(reqs)-1]), "[PLAN_DECISION]: rejected", "also fix typos")
	if got := h.plan(plan.ID).Status; got != core.PlanRevised {
		t.Errorf("v1 status %s, want revised", got)
	}

	h.model.push(sid,
		calls(update(stepArg{Step: "Reword intro", Status: "completed"}, stepArg{Step: "Fix links", Status: "in_progress"})),
		calls(update(stepArg{Step: "Fix links", Status: "completed"}, stepArg{Step: "Fix typos", Status: "completed"})),
		text("All three done."))
	rs = h.say("main", "local", "/plan accept")
	all := joinTexts(rs)
	mustContain(t, all, `Accepted plan v2 "Docs cleanup with typos"`, "[x] Reword intro", "Done: 3 of 3 steps. Plan v2 completed.", "All three done.")
	reqs = h.model.requests()
	mustContain(t, lastUser(reqs[len(reqs)-1]), "[PLAN_COMPLETE]")
	s := h.session("main")
	if s.Phase != core.PhaseOff || s.RejectionCount != 1 || len(s.Injections) != 0 {
		t.Fatalf("final session %+v", s)
	}
	if got := h.plan(s.PlanID).Status; got != core.PlanCompleted {
		t.Errorf("v2 status %s", got)
	}
	// Progress was one message edited in place.
	var progress []core.Reply
	for _, r := range h.out.all() {
		if r.Kind == core.ReplyProgress {
			progress = append(progress, r)
		}
	}
	if len(progress) != 2 || progress[0].ReplaceID != "" || progress[1].ReplaceID == "" {
		t.Errorf("progress replies = %+v", progress)
	}
	want := []core.EventKind{core.EventEntered, core.EventProposed, core.EventRevised, core.EventProposed,
		core.EventAccepted, core.EventStepUpdated, core.EventStepUpdated, core.EventCompleted}
	if got := h.events("main"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("audit = %v\nwant    %v", got, want)
	}
	mustContain(t, joinTexts(h.say("main", "local", "/plan")), "phase: off", `last plan: v2 "Docs cleanup with typos" (completed, 3/3 steps done)`)
}

// history is req's messages without the executing plan's progress, which comes last.
func history(req core.ModelRequest) []core.ChatMessage {
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Name == core.ProgressName {
		return req.Messages[:n-1]
	}
	return req.Messages
}

func lastUser(req core.ModelRequest) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == core.RoleUser && req.Messages[i].Name != core.ProgressName {
			return req.Messages[i].Content
		}
	}
	return ""
}

func TestDecisionRefusals(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	mustContain(t, lastText(h.say("main", "local", "/plan accept")), "no plan to accept (phase: off)", "/plan on")
	v1 := h.toPending("main", "First")
	h.model.push(sid, calls(propose("Second", "Other step")))
	h.say("main", "local", "please change it") // plain text is a comment; the agent re-proposes
	s := h.session("main")
	v2 := h.plan(s.PlanID)
	if v2.Version != 2 || h.plan(v1.ID).Status != core.PlanSuperseded {
		t.Fatalf("v2 %+v, v1 %s", v2, h.plan(v1.ID).Status)
	}
	before := h.session("main")
	for _, tc := range []struct {
		name  string
		do    func() []core.Reply
		wants []string
	}{
		{"accept an old version", func() []core.Reply { return h.say("main", "local", "/plan accept v1") }, []string{`Plan v1 was superseded by v2 "Second"`}},
		{"accept a future version", func() []core.Reply { return h.say("main", "local", "/plan accept v7") }, []string{"There is no plan v7", "Plan v2"}},
		{"stale Accept button", func() []core.Reply {
			return h.click("main", "local", core.Action{Kind: core.ActionAccept, ApprovalID: v1.ApprovalID})
		}, []string{"superseded by v2"}},
		{"unknown button", func() []core.Reply {
			return h.click("main", "local", core.Action{Kind: core.ActionAccept, ApprovalID: "forged"})
		}, []string{"no longer valid"}},
		{"revise without feedback", func() []core.Reply { return h.say("main", "local", "/plan revise") }, []string{"/plan revise <feedback>"}},
		{"Revise button without feedback", func() []core.Reply {
			return h.click("main", "local", core.Action{Kind: core.ActionRevise, ApprovalID: v2.ApprovalID})
		}, []string{"/plan revise <feedback>"}},
		{"answer with no question", func() []core.Reply { return h.say("main", "local", "/plan answer yes") }, []string{"no question waiting"}},
		{"unknown subcommand", func() []core.Reply { return h.say("main", "local", "/plan acept") }, []string{"Did you mean /plan accept?"}},
		{"not the owner", func() []core.Reply { return h.say("main", "bob", "/plan accept") }, []string{"Only local, who started this conversation"}},
		{"plan on twice", func() []core.Reply { return h.say("main", "local", "/plan on") }, []string{"already on (phase: awaiting_approval)"}},
		{"model says a command", func() []core.Reply {
			h.model.push(sid, text("/plan accept"))
			return h.say("main", "local", "what do you think?")
		}, []string{"/plan accept"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := tc.do()
			mustContain(t, joinTexts(rs), tc.wants...)
			if tc.name != "model says a command" && (len(rs) != 1 || rs[0].Kind != core.ReplyNotice) {
				t.Fatalf("replies %+v, want one notice", rs)
			}
			after := h.session("main")
			if after.Phase != core.PhaseAwaitingApproval || after.ApprovalID != before.ApprovalID || after.PlanID != before.PlanID {
				t.Fatalf("state changed: %+v", after)
			}
			if p := h.plan(v2.ID); p.Status != core.PlanPending {
				t.Fatalf("v2 is %s", p.Status)
			}
		})
	}
	// Refused decisions are audited.
	refused := 0
	for _, k := range h.events("main") {
		if k == core.EventRefused {
			refused++
		}
	}
	if refused < 3 {
		t.Errorf("%d refused audit rows, want at least 3 (stale version, stale button, non-owner)", refused)
	}
	// And the pending approval still works.
	mustContain(t, joinTexts(h.click("main", "local", core.Action{Kind: core.ActionAccept, ApprovalID: v2.ApprovalID})), `Accepted plan v2 "Second"`)
	mustContain(t, joinTexts(h.click("main", "local", core.Action{Kind: core.ActionAccept, ApprovalID: v2.ApprovalID})), "already decided (accepted by local)")
}

func TestApproversFromConfig(t *testing.T) {
	h := newHarness(t, func(c *engine.Config) { c.Approvers = []string{"terminal:alice"} })
	h.say("main", "local", "/plan on") // local owns the session but is not an approver
	mustContain(t, lastText(h.say("main", "local", "/plan on")), "Only approvers can decide on plans here (local is not one).")
	h.say("main", "alice", "/plan on")
	if h.session("main").Phase != core.PhasePlanning {
		t.Fatal("alice could not turn plan mode on")
	}
	mustContain(t, lastText(h.say("main", "bob", "/plan off")), "(bob is not one)")
	mustContain(t, lastText(h.say("main", "bob", "/plan status")), "phase: planning") // anyone may look
}

func TestDirectMessagesMayDecide(t *testing.T) {
	h := newHarness(t)
	h.toPending("dm", "Plan")
	m := core.Message{Address: addr("dm"), Sender: core.Person{ID: "carol"}, Text: "/plan accept", Direct: true}
	if err := h.eng.Handle(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if got := h.session("dm").Phase; got != core.PhaseExecuting {
		t.Fatalf("phase %s: anyone in a direct message may decide when no approvers are configured", got)
	}
}

func TestThirdRejectionAsksForClarifyingQuestion(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	h.toPending("main", "P")
	for i := 1; i <= 3; i++ {
		h.model.push(sid, calls(propose(fmt.Sprintf("P%d", i), "Step", fmt.Sprintf("Step %d", i))))
		rs := h.say("main", "local", fmt.Sprintf("/plan revise try %d", i))
		reqs := h.model.requests()
		last := lastUser(reqs[len(reqs)-1])
		if asks := strings.Contains(last, "ask_user_question"); asks != (i == 3) {
			t.Errorf("rejection %d: clarifying-question hint present = %v\n%s", i, asks, last)
		}
		mustContain(t, joinTexts(rs), fmt.Sprintf("(%s time)", []string{"", "1st", "2nd", "3rd"}[i]))
	}
	if got := h.session("main").RejectionCount; got != 3 {
		t.Errorf("rejection_count %d", got)
	}
}

func TestQuestionAndAnswer(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(call("ask_user_question", map[string]any{"question": "Which docs?", "options": []string{"README", "All of docs/"}})))
	rs := h.say("main", "local", "tidy the docs")
	q := rs[len(rs)-1]
	if q.Kind != core.ReplyQuestion || len(q.Buttons) != 2 || q.Buttons[1].Action.Value != "All of docs/" {
		t.Fatalf("question reply %+v", q)
	}
	mustContain(t, lastText(h.say("main", "local", "/plan answer 3")), `"3" is not one of the options`)
	mustContain(t, lastText(h.say("main", "local", "something else")), "A question is waiting")
	if h.session("main").Question == nil {
		t.Fatal("the question was cleared by a non-answer")
	}
	h.model.push(sid, text("Thanks."))
	mustContain(t, joinTexts(h.say("main", "local", "/plan answer 2")), "Answer recorded: All of docs/", "Thanks.")
	reqs := h.model.requests()
	mustContain(t, lastUser(reqs[len(reqs)-1]), "[QUESTION_ANSWER]: All of docs/")
	if h.session("main").Question != nil {
		t.Fatal("question still pending")
	}
	// Free text is accepted only when the question allows it.
	h.model.push(sid, calls(call("ask_user_question", map[string]any{"question": "Name?", "options": []string{"a", "b"}, "allow_freetext": true})))
	h.say("main", "local", "ask again")
	mustContain(t, joinTexts(h.say("main", "local", "something custom")), "Answer recorded: something custom")
}

func TestJudgeSendsInvalidPlansBackToTheModel(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid,
		calls(call("exit_plan_mode", map[string]any{"title": "No steps", "plan": []any{}})),
		calls(call("exit_plan_mode", map[string]any{"title": "Escape", "plan": []stepArg{{Step: "x"}}, "scope": map[string]any{"allowed_paths": []string{"../x"}}})),
		calls(call("exit_plan_mode", map[string]any{"title": "Bad JSON", "plan": "not a list"})),
		calls(propose("Good", "Real step")))
	rs := h.say("main", "local", "go")
	var plans int
	for _, r := range rs {
		if r.Kind == core.ReplyPlan {
			plans++
			mustContain(t, r.Text, "Good")
		}
	}
	if plans != 1 {
		t.Fatalf("%d plan replies, want only the valid one:\n%s", plans, joinTexts(rs))
	}
	reqs := h.model.requests()
	var errs []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == core.RoleTool && strings.HasPrefix(m.Content, "error:") {
			errs = append(errs, m.Content)
		}
	}
	if len(errs) != 3 {
		t.Fatalf("tool errors %q", errs)
	}
	mustContain(t, errs[1], "../x")
	if got := h.plans("main"); len(got) != 1 || got[0].Body.Title != "Good" {
		t.Fatalf("stored plans %+v", got)
	}
}

func TestModelFailureChangesNothing(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	h.toPending("main", "P")
	h.model.push(sid, step{err: errors.New("endpoint down (503)")})
	rs := h.say("main", "local", "/plan accept")
	mustContain(t, joinTexts(rs), "Accepted plan v1", "The model could not answer: endpoint down (503)")
	s := h.session("main")
	if s.Phase != core.PhaseExecuting || len(s.Injections) != 1 {
		t.Fatalf("after a failed model call the decision stays and its injection stays queued: %+v", s)
	}
	// The next message delivers the queued decision to the model.
	h.say("main", "local", "try again")
	reqs := h.model.requests()
	var sawDecision bool
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == core.RoleUser && strings.HasPrefix(m.Content, "[PLAN_DECISION]: approved") {
			sawDecision = true
		}
	}
	if !sawDecision {
		t.Fatal("queued decision never reached the model")
	}
	if s := h.session("main"); len(s.Injections) != 0 {
		t.Fatalf("injections not drained: %+v", s.Injections)
	}
}

func TestStopConditions(t *testing.T) {
	t.Run("same tool error three times", func(t *testing.T) {
		h := newHarness(t)
		sid := sessionID("main")
		h.say("main", "local", "/plan on")
		bad := func() step { return calls(call("exit_plan_mode", map[string]any{"title": "x", "plan": []any{}})) }
		h.model.push(sid, bad(), bad(), bad(), text("never reached"))
		rs := h.say("main", "local", "go")
		mustContain(t, lastText(rs), "same tool error happened three times")
		if strings.Contains(joinTexts(rs), "never reached") {
			t.Fatal("the turn went on after the stop")
		}
	})
	t.Run("max iterations", func(t *testing.T) {
		h := newHarness(t, func(c *engine.Config) { c.MaxIterations = 3 })
		sid := sessionID("main")
		for i := 0; i < 5; i++ {
			h.model.push(sid, calls(call("plan_status", map[string]any{})))
		}
		mustContain(t, lastText(h.say("main", "local", "loop")), "Stopped after 3 model calls")
	})
}

// writeTools is a Toolbox with one mutating tool that records what it wrote.
type writeTools struct {
	mu     sync.Mutex
	writes []string
}

func (w *writeTools) Tools() []core.ToolSpec {
	return []core.ToolSpec{
		{Name: "write_file", Kind: core.ToolMutating, Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "read_file", Kind: core.ToolReadOnly, Parameters: json.RawMessage(`{"type":"object"}`)},
	}
}

func (w *writeTools) Call(_ context.Context, _ core.Workspace, name string, args json.RawMessage) (string, error) {
	var a struct{ Path string }
	_ = json.Unmarshal(args, &a)
	if name == "write_file" {
		w.mu.Lock()
		w.writes = append(w.writes, a.Path)
		w.mu.Unlock()
	}
	return "done " + a.Path, nil
}

func (w *writeTools) WritePaths(_ string, args json.RawMessage) ([]string, error) {
	var a struct{ Path string }
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, err
	}
	return []string{a.Path}, nil
}

func (w *writeTools) written() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes...)
}

func TestGateDeniesMutationsUntilAccepted(t *testing.T) {
	tools := &writeTools{}
	h := newHarness(t)
	h.tools = tools
	h.open()
	sid := sessionID("main")
	write := func(p string) core.ToolCall { return call("write_file", map[string]any{"path": p}) }
	// Off and planning: refused, the tool never runs; reading is fine.
	h.model.push(sid, calls(write("README.md"), call("read_file", map[string]any{"path": "README.md"})), text("ok"))
	h.say("main", "local", "change the readme")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(write("README.md")), calls(call("exit_plan_mode", map[string]any{
		"title": "Readme", "plan": []stepArg{{Step: "Edit"}}, "scope": map[string]any{"allowed_paths": []string{"README.md", "docs/**"}, "forbidden_paths": []string{"docs/secret.md"}},
	})))
	h.say("main", "local", "go")
	if got := tools.written(); len(got) != 0 {
		t.Fatalf("writes before acceptance: %v", got)
	}
	// Executing: in scope runs, out of scope stops the turn.
	h.model.push(sid, calls(write("README.md")), calls(write("docs/a.md")), calls(write("main.go")))
	rs := h.say("main", "local", "/plan accept")
	if got := tools.written(); fmt.Sprint(got) != "[README.md docs/a.md]" {
		t.Fatalf("writes %v", got)
	}
	mustContain(t, lastText(rs), "Stopped:", "main.go", "outside the plan's scope")
	h.model.push(sid, calls(write("docs/secret.md")))
	mustContain(t, lastText(h.say("main", "local", "continue")), "forbidden")
	if got := tools.written(); len(got) != 2 {
		t.Fatalf("forbidden write ran: %v", got)
	}
	// Every refusal and every run is an audit row: off, planning, two runs, two stops.
	var got []string
	for _, r := range gateRows(t, h, "main") {
		got = append(got, fmt.Sprintf("%s %s %s", r.Kind, r.Paths, r.Outcome))
	}
	want := "[tool_blocked [README.md] refused tool_blocked [README.md] refused tool_ran [README.md] ok tool_ran [docs/a.md] ok " +
		"tool_blocked [main.go] refused tool_blocked [docs/secret.md] refused]"
	if fmt.Sprint(got) != want {
		t.Fatalf("gate rows %v\nwant %s", got, want)
	}
}

func TestPlanStatusDoesNotWrite(t *testing.T) {
	h := newHarness(t)
	h.toPending("main", "P")
	db := filepath.Join(h.dir, "plangate.db")
	sizes := func() string {
		var b strings.Builder
		for _, f := range []string{db, db + "-wal"} {
			st, err := os.Stat(f)
			if err == nil {
				fmt.Fprintf(&b, "%s=%d@%d ", filepath.Base(f), st.Size(), st.ModTime().UnixNano())
			}
		}
		return b.String()
	}
	before, version := sizes(), h.session("main").Version
	for range 20 {
		mustContain(t, lastText(h.say("main", "local", "/plan status")), "phase: awaiting_approval")
		h.say("main", "anyone", "/plan help")
		h.say("main", "local", "/plan show")
	}
	if after := sizes(); after != before || h.session("main").Version != version {
		t.Fatalf("read-only commands wrote: %s -> %s", before, after)
	}
}
