package core_test

// Engine tests of restarts, duplicates, auto-approve, interruption, buttons and resuming.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

func TestRestartKeepsPendingApproval(t *testing.T) {
	h := newHarness(t)
	p := h.toPending("main", "Survives")
	h.restart()
	mustContain(t, lastText(h.say("main", "local", "/plan status")), "phase: awaiting_approval", `v1 "Survives"`)
	mustContain(t, joinTexts(h.click("main", "local", core.Action{Kind: core.ActionAccept, ApprovalID: p.ApprovalID})), `Accepted plan v1 "Survives"`)
	if got := h.session("main").Phase; got != core.PhaseExecuting {
		t.Fatalf("phase %s", got)
	}
}

func TestDuplicateInboundHandledOnce(t *testing.T) {
	h := newHarness(t)
	h.toPending("main", "P")
	m := core.Message{ID: "upd-42", Address: addr("main"), Sender: core.Person{ID: "local"}, Text: "/plan revise smaller"}
	for range 3 {
		if err := h.eng.Handle(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.session("main").RejectionCount; got != 1 {
		t.Fatalf("rejection_count %d: a redelivered event was handled again", got)
	}
}

func TestAutoApprove(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	mustContain(t, lastText(h.say("main", "local", "/plan auto")), "Auto-approve is on")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(propose("Auto plan", "Only")), calls(update(stepArg{Step: "Only", Status: "completed"})), text("Finished."))
	rs := h.say("main", "local", "go")
	mustContain(t, joinTexts(rs), "Auto-approved", "Done: 1 of 1 steps", "Finished.")
	ev := fmt.Sprint(h.events("main"))
	mustContain(t, ev, "auto_accepted", "completed")

	// Turning auto on while a plan waits accepts it.
	h2 := newHarness(t)
	h2.toPending("main", "Waiting")
	mustContain(t, joinTexts(h2.say("main", "local", "/plan auto on")), `Accepted the pending plan v1 "Waiting"`)
	if got := h2.session("main").Phase; got != core.PhaseExecuting {
		t.Fatalf("phase %s", got)
	}
}

func TestStartInPlan(t *testing.T) {
	h := newHarness(t, func(c *core.Config) { c.StartInPlan = true })
	mustContain(t, joinTexts(h.say("main", "local", "hello")), "Plan mode is on")
	if got := h.session("main").Phase; got != core.PhasePlanning {
		t.Fatalf("phase %s", got)
	}
}

func TestPlanOffAbandonsAndAborts(t *testing.T) {
	h := newHarness(t)
	p := h.toPending("a", "Pending")
	mustContain(t, lastText(h.say("a", "local", "/plan off")), "abandoned")
	if h.plan(p.ID).Status != core.PlanAbandoned || h.session("a").Phase != core.PhaseOff {
		t.Fatal("pending plan not abandoned")
	}
	p = h.toExecuting("b", "Running")
	mustContain(t, lastText(h.say("b", "local", "/plan off")), "stopped after 0 of 2 steps")
	if h.plan(p.ID).Status != core.PlanAborted {
		t.Fatal("executing plan not aborted")
	}
	mustContain(t, lastText(h.say("b", "local", "/plan off")), "already off")
}

func TestReviseInterruptsExecutionAtToolBoundary(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	h.toPending("main", "Long")
	started := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	h.model.Hook(func(req core.ModelRequest) {
		if strings.Contains(lastUser(req), "[PLAN_DECISION]: approved") {
			once.Do(func() { close(started); <-release })
		}
	})
	h.model.push(sid, calls(update(stepArg{Step: "First step", Status: "in_progress"})))
	accepted := h.eng.Enqueue(context.Background(), core.Message{Address: addr("main"), Sender: core.Person{ID: "local"}, Text: "/plan accept"})
	<-started
	revised := h.eng.Enqueue(context.Background(), core.Message{Address: addr("main"), Sender: core.Person{ID: "local"}, Text: "/plan revise stop, smaller"})
	close(release)
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	if err := <-revised; err != nil {
		t.Fatal(err)
	}
	all := joinTexts(h.out.all())
	mustContain(t, all, "Stopped: /plan revise came in.", "Sent plan v1 back for revision")
	if strings.Index(all, "Stopped: /plan revise") > strings.Index(all, "Sent plan v1 back") {
		t.Fatal("the revision was applied before the running turn stopped")
	}
	p := h.plan(h.session("main").PlanID)
	if p.Body.Steps[0].Status != plan.StepPending {
		t.Fatalf("the interrupted tool call ran: %+v", p.Body.Steps[0])
	}
}

// TestDecisionsRetireButtons: every way a pending version stops being pending tells the
// channel, by approval id, so adapters can take the buttons off that message.
func TestDecisionsRetireButtons(t *testing.T) {
	decided := func(h *harness) map[string]string {
		out := map[string]string{}
		for _, r := range h.out.all() {
			if r.Kind == core.ReplyDecided {
				out[r.Ref] = r.Text
			}
		}
		return out
	}
	h := newHarness(t)
	v1 := h.toPending("main", "One")
	h.model.push(sessionID("main"), calls(propose("Two", "x")))
	h.say("main", "local", "change it")
	v2 := h.plan(h.session("main").PlanID)
	h.say("main", "local", "/plan accept")
	got := decided(h)
	mustContain(t, got[v1.ApprovalID], `Plan v1 "One" — superseded by v2`)
	mustContain(t, got[v2.ApprovalID], `Plan v2 "Two" — accepted by local`)

	h2 := newHarness(t)
	p := h2.toPending("main", "Dropped")
	h2.say("main", "local", "/plan off")
	mustContain(t, decided(h2)[p.ApprovalID], "abandoned (/plan off by local)")
}

func TestWaitReturnsWhenIdle(t *testing.T) {
	h := newHarness(t)
	release := make(chan struct{})
	h.model.Hook(func(core.ModelRequest) { <-release })
	done := h.eng.Enqueue(context.Background(), core.Message{Address: addr("main"), Sender: core.Person{ID: "local"}, Text: "work slowly"})
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := h.eng.Wait(short); err == nil {
		t.Fatal("Wait returned while a turn was running")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := h.eng.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestAnswerButtonsAreBoundToTheirQuestion(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	ask := func(q string) core.Reply {
		h.model.push(sid, calls(call("ask_user_question", map[string]any{"question": q, "options": []string{"A", "B"}})))
		rs := h.say("main", "local", "ask "+q)
		return rs[len(rs)-1]
	}
	first := ask("First?")
	h.model.push(sid, text("thanks"))
	h.click("main", "local", first.Buttons[0].Action)
	second := ask("Second?")
	if first.Buttons[0].Action.ApprovalID == "" || first.Buttons[0].Action.ApprovalID == second.Buttons[0].Action.ApprovalID {
		t.Fatalf("question ids: %q %q", first.Buttons[0].Action.ApprovalID, second.Buttons[0].Action.ApprovalID)
	}
	mustContain(t, lastText(h.click("main", "local", first.Buttons[1].Action)), "already answered")
	if q := h.session("main").Question; q == nil || q.Text != "Second?" {
		t.Fatalf("an old button answered the new question: %+v", q)
	}
	mustContain(t, joinTexts(h.click("main", "local", second.Buttons[1].Action)), "Answer recorded: B")
}

func TestRepliesCarryTheInboundID(t *testing.T) {
	h := newHarness(t)
	m := core.Message{ID: "evt-9", Address: addr("main"), Sender: core.Person{ID: "local"}, Text: "/plan status"}
	n := h.out.count()
	if err := h.eng.Handle(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	rs := h.out.since(n)
	if len(rs) != 1 || rs[0].InReplyTo != "evt-9" {
		t.Fatalf("replies %+v", rs)
	}
}

// TestResumeAfterCrash: a decision committed just before the process died (its injection
// still queued) and a message that was never answered are both picked up by Resume.
func TestResumeAfterCrash(t *testing.T) {
	h := newHarness(t)
	p := h.toPending("a", "Crashed")
	// Simulate "accept committed, then killed before the turn": commit the decision by hand.
	s := h.session("a")
	s.Phase = core.PhaseExecuting
	s.ApprovalID = ""
	s.Injections = []core.Injection{{Kind: core.InjectDecision, Text: "[PLAN_DECISION]: approved"}}
	p.Status = core.PlanAccepted
	if _, err := h.st.Commit(context.Background(), core.Change{Session: &s, Plans: []core.Plan{p}}); err != nil {
		t.Fatal(err)
	}
	// And a message whose turn never ran.
	s2 := core.Session{ID: sessionID("b"), Address: addr("b"), Phase: core.PhaseOff, Owner: "local"}
	if _, err := h.st.Commit(context.Background(), core.Change{Session: &s2,
		Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "are you there?", At: h.clock}}}); err != nil {
		t.Fatal(err)
	}
	h.restart()
	h.model.push(sessionID("a"), text("Continuing the plan."))
	h.model.push(sessionID("b"), text("Yes, here."))
	n, err := h.eng.Resume(context.Background(), nil)
	if err != nil || n != 2 {
		t.Fatalf("Resume = %d, %v", n, err)
	}
	all := joinTexts(h.out.all())
	mustContain(t, all, "picking up where it stopped", "Continuing the plan.", "Yes, here.")
	if got := h.session("a").Injections; len(got) != 0 {
		t.Fatalf("injections still queued: %+v", got)
	}
	// Nothing left: a second Resume does nothing.
	if n, err := h.eng.Resume(context.Background(), nil); err != nil || n != 0 {
		t.Fatalf("second Resume = %d, %v", n, err)
	}
}

func TestRoleApprovers(t *testing.T) {
	h := newHarness(t, func(c *core.Config) { c.Approvers = []string{"discord-role:42"} })
	a := core.Address{Channel: "discord", Account: "g1", Chat: "c1"}
	say := func(p core.Person, text string) string {
		n := h.out.count()
		if err := h.eng.Handle(context.Background(), core.Message{Address: a, Sender: p, Text: text}); err != nil {
			t.Fatal(err)
		}
		return joinTexts(h.out.since(n))
	}
	mustContain(t, say(core.Person{ID: "u1", Name: "ann", Roles: []string{"discord-role:7"}}, "/plan on"), "Only approvers")
	mustContain(t, say(core.Person{ID: "u2", Name: "bob", Roles: []string{"discord-role:42"}}, "/plan on"), "Plan mode is on")
}
