package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
)

// waitCard waits until the conversation shows the card of plan id: the engine posts it
// just after committing the plan.
func (e *env) waitCard(user, conv, planID string) {
	e.t.Helper()
	waitFor(e.t, "the card of "+planID, func() bool {
		items, _ := e.web.convo(context.Background(), address(user, conv)).snapshot()
		for _, it := range items {
			if it.kind == itemCard && it.planID == planID {
				return true
			}
		}
		return false
	})
}

// shows reports whether the conversation shows a text containing want.
func (e *env) shows(user, conv, want string) bool {
	for _, s := range e.web.shown(address(user, conv)) {
		if strings.Contains(s, want) {
			return true
		}
	}
	return false
}

func TestPlanCycleOverHTTP(t *testing.T) {
	e := newEnv(t, "web:alice")
	alice := e.signIn("alice")
	sid := address("alice", "c1").SessionID()
	s := e.pendingPlan(alice, "c1", "Add a changelog", "Create CHANGELOG.md", "Link it from the README")
	page := alice.get("/c/c1")
	for _, want := range []string{"Add a changelog", "v1", ">waiting for approval<", "[ ]", ">Accept<", "Revise", ">Auto<", "Download the plan (.md)"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the chat page lacks %q: %s", want, page)
		}
	}
	md := alice.get("/plans/" + s.PlanID + ".md")
	if !strings.Contains(md, "# Add a changelog") || !strings.Contains(md, "- [ ] Create CHANGELOG.md") {
		t.Fatalf("plan download: %s", md)
	}

	e.model.Push(sid, proposal("Add a changelog", "Create CHANGELOG.md", "Link it from the README", "Mention it in CONTRIBUTING"))
	res := alice.post("/c/c1/actions", url.Values{"kind": {"revise"}, "approval": {s.ApprovalID}, "value": {"also mention it in CONTRIBUTING"}})
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("revise: %d %s", res.StatusCode, body(res))
	}
	var s2 core.Session
	waitFor(t, "v2", func() bool {
		s2 = e.session("alice", "c1")
		return s2.Phase == core.PhaseAwaitingApproval && s2.ApprovalID != s.ApprovalID
	})
	e.waitCard("alice", "c1", s2.PlanID)
	page = alice.get("/c/c1")
	if !strings.Contains(page, "Changes from v1: &#43; Mention it in CONTRIBUTING") || !strings.Contains(page, ">sent back for revision<") {
		t.Fatalf("v2's card with its changes and v1 superseded: %s", page)
	}

	// A stale click, from a tab that still shows v1: the engine's refusal appears.
	alice.post("/c/c1/actions", url.Values{"kind": {"accept"}, "approval": {s.ApprovalID}})
	waitFor(t, "the refusal of the stale click", func() bool { return e.shows("alice", "c1", "v1 \"Add a changelog\" was already decided") })

	e.model.Push(sid,
		progress(map[string]string{"Create CHANGELOG.md": "completed", "Link it from the README": "in_progress"}),
		progress(map[string]string{"Link it from the README": "completed", "Mention it in CONTRIBUTING": "completed"}),
		core.ModelResponse{Text: "Done: the changelog exists and is linked."})
	alice.post("/c/c1/actions", url.Values{"kind": {"accept"}, "approval": {s2.ApprovalID}})
	waitFor(t, "the plan to complete", func() bool { return e.session("alice", "c1").Phase == core.PhaseOff })
	wctx, cancel := context.WithTimeout(context.Background(), 5e9)
	defer cancel()
	_ = e.eng.Wait(wctx)
	page = alice.get("/c/c1")
	if !strings.Contains(page, ">completed<") || !strings.Contains(page, "3 of 3 steps done") || strings.Contains(page, `class="accept"`) {
		t.Fatalf("the completed card: %s", page)
	}
}

func TestDashboardDecidesTelegramSession(t *testing.T) {
	e := newEnv(t, "web:alice", "telegram:42")
	tgAddr := core.Address{Channel: "telegram", Account: "900", Chat: "555"}
	e.model.Push(tgAddr.SessionID(), proposal("Rotate the logs", "Add logrotate config"))
	ctx := context.Background()
	go func() {
		_ = e.tg.Deliver(ctx, core.Message{ID: "1", Address: tgAddr, Sender: core.Person{ID: "42", Name: "tg-user"}, Text: "/plan on rotate the logs", Direct: true})
	}()
	var s core.Session
	waitFor(t, "the telegram plan", func() bool {
		s, _ = e.st.Session(ctx, tgAddr.SessionID())
		return s.Phase == core.PhaseAwaitingApproval
	})
	alice := e.signIn("alice")
	page := alice.get("/dashboard?channel=telegram")
	for _, want := range []string{"telegram", "chat 555", "Rotate the logs", "v1", "Waiting since", "next nudge", "approvals so far: none yet", ">Accept<"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the dashboard lacks %q: %s", want, page)
		}
	}
	if page := alice.get("/dashboard?channel=slack"); strings.Contains(page, "Rotate the logs") {
		t.Fatal("the slack filter shows a telegram session")
	}
	res := alice.post("/dashboard/actions", url.Values{"session": {s.ID}, "kind": {"accept"}, "approval": {s.ApprovalID}})
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("accept from the dashboard: %d %s", res.StatusCode, body(res))
	}
	waitFor(t, "the telegram chat to hear of it", func() bool {
		for _, r := range e.tg.Replies() {
			if strings.Contains(r.Text, "Accepted plan v1") {
				return true
			}
		}
		return false
	})
	detail := alice.get("/dashboard/sessions/" + url.PathEscape(s.ID))
	if !strings.Contains(detail, "alice accepted v1.") || !strings.Contains(detail, "The agent proposed v1: “Rotate the logs”.") || strings.Contains(detail, "awaiting_approval") {
		t.Fatalf("the session's timeline: %s", detail)
	}
	// The same click again is stale: answered on the dashboard, not sent on.
	res = alice.post("/dashboard/actions", url.Values{"session": {s.ID}, "kind": {"accept"}, "approval": {s.ApprovalID}})
	if res.StatusCode != http.StatusConflict || !strings.Contains(body(res), "already decided") {
		t.Fatalf("a stale accept: %d %s", res.StatusCode, body(res))
	}
}

func TestDashboardAnswersAQuestion(t *testing.T) {
	e := newEnv(t, "web:alice", "telegram:42")
	tgAddr := core.Address{Channel: "telegram", Account: "900", Chat: "777"}
	args := []byte(`{"question":"Which changelog format?","options":["Keep a Changelog","Plain list"],"allow_freetext":true}`)
	e.model.Push(tgAddr.SessionID(), core.ModelResponse{ToolCalls: []core.ToolCall{{ID: "q", Name: "ask_user_question", Args: args}}})
	ctx := context.Background()
	go func() {
		_ = e.tg.Deliver(ctx, core.Message{ID: "1", Address: tgAddr, Sender: core.Person{ID: "42"}, Text: "/plan on add a changelog", Direct: true})
	}()
	var s core.Session
	waitFor(t, "the question", func() bool {
		s, _ = e.st.Session(ctx, tgAddr.SessionID())
		return s.Question != nil
	})
	alice := e.signIn("alice")
	page := alice.get("/dashboard")
	for _, want := range []string{"Question: Which changelog format?", `class="option">Keep a Changelog<`, `class="option">Plain list<`, "Your answer"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the dashboard lacks %q: %s", want, page)
		}
	}
	res := alice.post("/dashboard/actions", url.Values{"session": {s.ID}, "kind": {"answer"}, "approval": {s.Question.ID}, "value": {"Plain list"}})
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("answering from the dashboard: %d %s", res.StatusCode, body(res))
	}
	waitFor(t, "the question to be answered", func() bool {
		s, _ := e.st.Session(ctx, tgAddr.SessionID())
		return s.Question == nil
	})
	if page := alice.get("/dashboard"); strings.Contains(page, "Which changelog format?") {
		t.Fatal("the answered question is still listed")
	}
}

// A counted approval from the dashboard (2 of 3 needed) keeps the plan pending and the
// dashboard shows how many it has.
func TestDashboardShowsCountedApprovals(t *testing.T) {
	// bob is a global approver, but the policy's list replaces it on telegram.
	e := newPolicyEnv(t, []machine.Policy{{Match: machine.PolicyMatch{Channel: "telegram"},
		Approvers: []string{"web:alice", "telegram:42", "telegram:43"}, Required: 2}}, "web:bob")
	tgAddr := core.Address{Channel: "telegram", Account: "900", Chat: "555"}
	e.model.Push(tgAddr.SessionID(), proposal("Rotate the logs", "Add logrotate config"))
	ctx := context.Background()
	go func() {
		_ = e.tg.Deliver(ctx, core.Message{ID: "1", Address: tgAddr, Sender: core.Person{ID: "42", Name: "tg-user"}, Text: "/plan on rotate the logs", Direct: true})
	}()
	var s core.Session
	waitFor(t, "the telegram plan", func() bool {
		s, _ = e.st.Session(ctx, tgAddr.SessionID())
		return s.Phase == core.PhaseAwaitingApproval
	})
	alice := e.signIn("alice")
	if page := alice.get("/dashboard"); !strings.Contains(page, "approvals so far: 0 of 2 approvals") {
		t.Fatalf("the dashboard before any approval: %s", page)
	}
	res := alice.post("/dashboard/actions", url.Values{"session": {s.ID}, "kind": {"accept"}, "approval": {s.ApprovalID}})
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("accept from the dashboard: %d %s", res.StatusCode, body(res))
	}
	waitFor(t, "the approval to be recorded", func() bool {
		p, err := e.st.Plan(ctx, s.PlanID)
		return err == nil && len(p.Approvals) == 1
	})
	page := alice.get("/dashboard")
	for _, want := range []string{"approvals so far: 1 of 2 approvals (alice)", "Approvals: 1 of 2 approvals (alice)", ">Accept<"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the dashboard after one approval lacks %q: %s", want, page)
		}
	}
	if got, _ := e.st.Session(ctx, s.ID); got.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("phase %s after one of two approvals", got.Phase)
	}
	bob := e.signIn("bob")
	if page := bob.get("/dashboard"); strings.Contains(page, ">Accept<") || strings.Contains(page, "Rotate the logs") {
		t.Fatalf("bob, not an approver under the policy, is shown the session: %s", page)
	}
	if res := bob.post("/dashboard/actions", url.Values{"session": {s.ID}, "kind": {"accept"}, "approval": {s.ApprovalID}}); res.StatusCode != http.StatusNotFound {
		t.Fatalf("bob's accept from the dashboard: %d %s", res.StatusCode, body(res))
	}
}
