package engine_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
)

// proposeAnswering is propose with the comments it says it answers.
func proposeAnswering(title string, answered []string, steps ...string) core.ToolCall {
	tc := propose(title, steps...)
	var args map[string]any
	_ = json.Unmarshal(tc.Args, &args) // propose's own JSON
	args["answered_comments"] = answered
	return call(engine.ToolExitPlanMode, args)
}

// Comments on steps wait on the pending version, go to the agent with the next revise tied
// to the steps' texts, and the next version's Changes says which it answered; the store
// keeps each comment, when it was sent and which version answered it.
func TestStepCommentsReachTheAgentAndTheNextVersion(t *testing.T) {
	h := newHarness(t)
	const chat = "c"
	sid := sessionID(chat)
	v1 := h.toPending(chat, "Client")

	r := h.say(chat, "local", "/plan revise 2: use the v2 API instead")
	mustContain(t, lastText(r), `Comment c1 on step 2 of Plan v1 "Client" recorded (1 comment waiting).`, "/plan revise [feedback] sends the plan back")
	r = h.say(chat, "bob", "/plan revise 1,2: share one client")
	if !strings.Contains(lastText(r), "Only") { // bob is no approver here
		t.Fatalf("bob's comment was taken: %q", lastText(r))
	}
	r = h.say(chat, "local", "/plan revise steps 1,2: share one client")
	mustContain(t, lastText(r), "Comment c2 on steps 1, 2", "(2 comments waiting)")
	if s := h.session(chat); s.Phase != core.PhaseAwaitingApproval || s.PlanID != v1.ID || s.RejectionCount != 0 {
		t.Fatalf("a comment decided something: %+v", s)
	}
	got := h.plan(v1.ID)
	if got.Status != core.PlanPending || len(got.Run.Comments) != 2 {
		t.Fatalf("stored v1: %s with comments %+v", got.Status, got.Run.Comments)
	}
	c1 := got.Run.Comments[0]
	if c1.ID != "c1" || c1.Text != "use the v2 API instead" || len(c1.Steps) != 1 || c1.Steps[0] != 2 ||
		c1.StepTexts[0] != "Second step" || c1.ByName != "local" || !strings.Contains(c1.By, "local") || c1.Sent || c1.At.IsZero() {
		t.Errorf("stored comment c1 = %+v", c1)
	}
	if evs := h.eventsOf(chat, core.EventCommented); len(evs) != 2 || evs[0].Detail != "c1 on step 2: use the v2 API instead" || evs[0].PlanVersion != 1 {
		t.Errorf("commented audit rows = %+v", evs)
	}
	mustContain(t, lastText(h.say(chat, "local", "/plan status")), "comments waiting: 2 comments (c1 on step 2, c2 on steps 1, 2) · /plan revise [feedback] sends them back")

	// The agent first claims a comment nobody made, then answers one of the two.
	h.model.push(sid,
		calls(proposeAnswering("Client v2", []string{"c1", "c9"}, "First step", "Use the v2 API")),
		calls(proposeAnswering("Client v2", []string{"c1"}, "First step", "Use the v2 API")))
	before := len(h.model.requests())
	r = h.say(chat, "local", "/plan revise")
	mustContain(t, joinTexts(r), "Sent plan v1 back for revision (1st time) with 2 comments (c1, c2).",
		"Changes from v1: + Use the v2 API · − Second step · comment c1 on step 2 answered · comment c2 on steps 1, 2 not answered")

	reqs := h.model.requests()[before:]
	if len(reqs) < 2 {
		t.Fatalf("%d model calls after the revise, want at least 2", len(reqs))
	}
	var decision string
	for _, m := range reqs[0].Messages {
		if strings.Contains(m.Content, "[PLAN_DECISION]: rejected") {
			decision = m.Content
		}
	}
	mustContain(t, decision, `Plan v1 "Client" was sent back by local.`,
		`- c1 on step 2 "Second step" (by local): use the v2 API instead`,
		`- c2 on steps 1 "First step", 2 "Second step" (by local): share one client`,
		"answered_comments")
	refusal := reqs[1].Messages[len(reqs[1].Messages)-1]
	if refusal.Role != core.RoleTool {
		t.Fatalf("second call's last message is %s, want the tool error", refusal.Role)
	}
	mustContain(t, refusal.Content, `answered_comments names "c9", which is not a comment sent to you; the comments are c1, c2`)

	plans := h.plans(chat)
	if len(plans) != 2 {
		t.Fatalf("%d versions, want 2 (the hostile claim stored nothing)", len(plans))
	}
	old, v2 := plans[0], plans[1]
	if old.Version != 1 || old.Status != core.PlanRevised || old.Decision == nil || old.Decision.Feedback != "comments c1, c2" {
		t.Fatalf("v1 after the revise: %+v", old)
	}
	if cs := old.Run.Comments; !cs[0].Sent || cs[0].AnsweredIn != 2 || !cs[1].Sent || cs[1].AnsweredIn != 0 {
		t.Errorf("v1's comments after v2: %+v", cs)
	}
	if len(v2.Run.Comments) != 0 {
		t.Errorf("v2 starts with comments: %+v", v2.Run.Comments)
	}
	file, err := os.ReadFile(v2.File)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(file), "## Changes from v1", "- Comment c1 on step 2 (answered): use the v2 API instead",
		"- Comment c2 on steps 1, 2 (not answered): share one client")
	if strings.Contains(lastText(h.say(chat, "local", "/plan status")), "comments waiting") {
		t.Error("v2's status lists v1's comments as waiting")
	}

	// v2 has no comments: a bare revise has nothing to send.
	sv := h.session(chat).Version
	mustContain(t, lastText(h.say(chat, "local", "/plan revise")), "What should change?", "/plan revise 2: <comment>")
	if h.session(chat).Version != sv || h.plan(v2.ID).Status != core.PlanPending {
		t.Error("a bare revise without comments changed something")
	}
}

// A comment that names a step the pending version lacks, or comes in the wrong phase, is
// refused with what would work, and nothing is stored.
func TestStepCommentRefusals(t *testing.T) {
	h := newHarness(t)
	const chat = "c"
	mustContain(t, lastText(h.say(chat, "local", "/plan revise 2: early")), "There is no plan to comment on (phase: off)")
	v1 := h.toPending(chat, "Client")
	sv := h.session(chat).Version
	for text, want := range map[string]string{
		"/plan revise 3: too far":  `Plan v1 "Client" has 2 steps; there is no step 3, so nothing was recorded. Comment with /plan revise N: <comment>, N from 1 to 2.`,
		"/plan revise 1,5: x":      "there is no step 5",
		"/plan revise 2,,4: x":     `"2,,4" has an empty entry`,
		"/plan revise 0: x":        "steps are numbered from 1",
		"/plan revise step x: y":   `"x" is not a step number`,
		"/plan revise 2:":          "needs the comment after the colon",
		"/plan revise 2: \u202e x": "the comment",
	} {
		r := h.say(chat, "local", text)
		if len(r) == 0 || r[len(r)-1].Kind != core.ReplyNotice {
			t.Errorf("%q: no refusal notice: %q", text, lastText(r))
		}
		mustContain(t, lastText(r), want)
	}
	if s := h.session(chat); s.Version != sv {
		t.Errorf("refused comments wrote the session row (version %d -> %d)", sv, s.Version)
	}
	if cs := h.plan(v1.ID).Run.Comments; len(cs) != 0 {
		t.Errorf("refused comments were stored: %+v", cs)
	}
	if evs := h.eventsOf(chat, core.EventCommented); len(evs) != 0 {
		t.Errorf("refused comments were audited: %+v", evs)
	}

	h.say(chat, "local", "/plan accept")
	mustContain(t, lastText(h.say(chat, "local", "/plan revise 1: later")), "already accepted and being carried out (phase: executing). To change course: /plan revise <feedback>.")
	if cs := h.plan(v1.ID).Run.Comments; len(cs) != 0 {
		t.Errorf("a comment while executing was stored: %+v", cs)
	}
}

// The Revise modal's step selector and a step's comment box arrive as a revise action with
// a step: a comment on the version the button belongs to; a stale button records nothing.
func TestStepCommentByAction(t *testing.T) {
	h := newHarness(t)
	const chat = "c"
	v1 := h.toPending(chat, "Client")
	r := h.click(chat, "local", core.Action{Kind: core.ActionRevise, ApprovalID: v1.ApprovalID, Value: "drop it", Step: 1})
	mustContain(t, lastText(r), "Comment c1 on step 1 of Plan v1")
	var approvals *core.Reply
	for i := range r {
		if r[i].Kind == core.ReplyApprovals {
			approvals = &r[i]
		}
	}
	if approvals == nil || approvals.Ref != v1.ApprovalID || !strings.Contains(approvals.Text, "1 comment waiting for /plan revise") {
		t.Errorf("no note for the version's buttons: %+v", approvals)
	}
	r = h.click(chat, "local", core.Action{Kind: core.ActionRevise, ApprovalID: "stale", Value: "x", Step: 1})
	mustContain(t, lastText(r), "no longer valid")
	if cs := h.plan(v1.ID).Run.Comments; len(cs) != 1 || cs[0].Steps[0] != 1 || cs[0].Text != "drop it" {
		t.Errorf("stored comments: %+v", cs)
	}
}
