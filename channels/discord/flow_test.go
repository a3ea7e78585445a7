package discord

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

// buttonsOf returns the custom_ids of m's buttons.
func buttonsOf(m shownMsg) []string { return customIDs(m.Components) }

// proposePlan drives a mention to a posted plan v1 and returns its message and session.
func (e *env) proposePlan(title string, steps ...string) (shownMsg, core.Session) {
	e.TB.Helper()
	e.Model.Push(sid("C1"), channeltest.Proposal(title, steps...))
	e.fd.say("C1", alice, "/plan on tidy the docs", true)
	plan := e.waitPlan("C1", "-v1.md")
	s := e.waitPhase("C1", core.PhaseAwaitingApproval)
	e.Idle()
	return plan, s
}

func TestMentionPlanAcceptToCompletion(t *testing.T) {
	e := newEnv(t)
	e.Model.Push(sid("C1"),
		channeltest.Proposal("Docs cleanup", "Reword intro", "Fix links"),
		channeltest.Progress(map[string]string{"Reword intro": "completed"}),
		channeltest.Progress(map[string]string{"Fix links": "completed"}),
		core.ModelResponse{Text: "All done: the intro is reworded and the links work."})

	e.fd.say("C1", alice, "/plan on tidy the docs", true)
	plan := e.waitPlan("C1", "docs-cleanup-v1.md")
	s := e.waitPhase("C1", core.PhaseAwaitingApproval)
	if s.Owner != alice.id {
		t.Errorf("session owner %q, want alice's user id", s.Owner)
	}
	if !strings.HasPrefix(plan.Content, "Plan v1 — Docs cleanup (2 steps)") {
		t.Errorf("plan message %q, want the title line first", plan.Content)
	}
	if !strings.HasPrefix(plan.Files[0].Data, "# Docs cleanup") {
		t.Errorf("attached file starts %.40q, want the plan markdown", plan.Files[0].Data)
	}
	want := []string{"plan:a:" + s.ApprovalID, "plan:r:" + s.ApprovalID, "plan:u:" + s.ApprovalID}
	if got := buttonsOf(plan); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("plan buttons %q, want %q", got, want)
	}

	click := e.fd.click(alice, plan, "plan:a:"+s.ApprovalID)
	if cb := e.waitCallback(click); cb.Type != 6 {
		t.Errorf("the Accept click was answered with type %d, want 6 (deferred update)", cb.Type)
	}
	e.fd.waitText("C1", "Done: 2 of 2 steps")
	e.fd.waitText("C1", "All done: the intro is reworded")
	e.waitPhase("C1", core.PhaseOff)
	e.Idle()

	var decided shownMsg
	for _, m := range e.fd.shown("C1") {
		if m.ID == plan.ID {
			decided = m
		}
	}
	if len(buttonsOf(decided)) != 0 || !strings.Contains(decided.Content, "accepted by Alice") {
		t.Errorf("decided plan message %q with buttons %q, want the decision shown and no buttons", decided.Content, buttonsOf(decided))
	}
	// The accept is answered by a follow-up to the click; progress is one message edited.
	if f := e.followups(click); len(f) != 1 || !strings.Contains(f[0].Content, "Accepted plan v1") {
		t.Errorf("follow-ups of the click %q, want one saying the plan was accepted", contents(f))
	}
	var checklists []shownMsg
	for _, m := range e.fd.shown("C1") {
		if strings.Contains(m.Content, "steps done") {
			checklists = append(checklists, m)
		}
	}
	if len(checklists) != 1 || checklists[0].Edits == 0 {
		t.Errorf("progress messages %q, want one message edited in place", contents(checklists))
	}
	checkAllowedMentions(t, e.fd)
}

// checkAllowedMentions asserts every message the bot sent or edited has "parse": [].
func checkAllowedMentions(t *testing.T, fd *fakeDiscord) {
	t.Helper()
	for _, m := range fd.all() {
		if m.Content == "(thinking)" && m.Edits == 0 {
			continue // the placeholder Discord makes itself
		}
		var am struct {
			Parse *[]string `json:"parse"`
			Users []string  `json:"users"`
			Roles []string  `json:"roles"`
		}
		if err := json.Unmarshal(m.AllowedMentions, &am); err != nil || am.Parse == nil || len(*am.Parse) != 0 || len(am.Users)+len(am.Roles) != 0 {
			t.Errorf("message %q has allowed_mentions %s, want {\"parse\":[]}", m.Content, m.AllowedMentions)
		}
	}
}

// msgByID returns message id as the fake shows it now.
func (e *env) msgByID(id string) shownMsg {
	e.TB.Helper()
	for _, m := range e.fd.all() {
		if m.ID == id {
			return m
		}
	}
	e.TB.Fatalf("no message %s", id)
	return shownMsg{}
}

func TestReviseAsApplicationCommand(t *testing.T) {
	e := newEnv(t)
	plan, s := e.proposePlan("Docs cleanup", "Reword intro")
	e.Model.Push(sid("C1"), channeltest.Proposal("Docs cleanup with typos", "Reword intro", "Fix typos"))

	id := e.fd.command("C1", alice, "revise", "feedback", "also fix typos")
	if cb := e.waitCallback(id); cb.Type != 5 {
		t.Errorf("/plan revise was answered with type %d, want 5 (deferred message)", cb.Type)
	}
	v2 := e.waitPlan("C1", "-v2.md")
	e.waitPhase("C1", core.PhaseAwaitingApproval)
	e.Idle()
	answer := e.followups(id)
	if len(answer) != 1 || !strings.Contains(answer[0].Content, "Sent plan v1 back for revision (1st time)") {
		t.Errorf("the command's answer %q, want the deferred message edited to the outcome", contents(answer))
	}
	old := e.msgByID(plan.ID)
	if len(buttonsOf(old)) != 0 || !strings.Contains(old.Content, "sent back for revision by Alice") {
		t.Errorf("v1 message %q with buttons %q, want the revision shown and no buttons", old.Content, buttonsOf(old))
	}
	s2 := e.waitPhase("C1", core.PhaseAwaitingApproval)
	if s2.RejectionCount != 1 || s2.LastFeedback != "also fix typos" || s2.ApprovalID == s.ApprovalID {
		t.Errorf("session after revise: rejections %d, feedback %q, approval %q (was %q)", s2.RejectionCount, s2.LastFeedback, s2.ApprovalID, s.ApprovalID)
	}
	if len(buttonsOf(v2)) != 3 {
		t.Errorf("v2 buttons %q, want Accept, Revise, Auto", buttonsOf(v2))
	}
}

func TestReviseButtonOpensModal(t *testing.T) {
	e := newEnv(t)
	plan, s := e.proposePlan("Docs cleanup", "Reword intro")
	e.Model.Push(sid("C1"), channeltest.Proposal("Docs cleanup v2", "Reword intro", "Fix typos"))

	click := e.fd.click(alice, plan, "plan:r:"+s.ApprovalID)
	cb := e.waitCallback(click)
	var modal struct {
		CustomID   string `json:"custom_id"`
		Title      string `json:"title"`
		Components []struct {
			Components []struct {
				Type     int    `json:"type"`
				CustomID string `json:"custom_id"`
				Required bool   `json:"required"`
			} `json:"components"`
		} `json:"components"`
	}
	if err := json.Unmarshal(cb.Data, &modal); err != nil {
		t.Fatal(err)
	}
	if cb.Type != 9 || modal.CustomID != "plan:m:"+s.ApprovalID || modal.Title != "Revise plan v1" ||
		len(modal.Components) != 2 || modal.Components[0].Components[0].CustomID != "feedback" || !modal.Components[0].Components[0].Required {
		t.Fatalf("the Revise click got type %d with %s, want a modal asking for feedback", cb.Type, cb.Data)
	}
	if e.Model.CallCount() != 1 {
		t.Errorf("the model was called %d times, want only for v1: opening a modal changes nothing", e.Model.CallCount())
	}

	submit := e.fd.submit("C1", alice, modal.CustomID, "  also fix typos  ")
	if cb := e.waitCallback(submit); cb.Type != 6 {
		t.Errorf("the modal submit was answered with type %d, want 6", cb.Type)
	}
	e.waitPlan("C1", "-v2.md")
	s2 := e.waitPhase("C1", core.PhaseAwaitingApproval)
	e.Idle()
	if s2.LastFeedback != "also fix typos" || s2.RejectionCount != 1 {
		t.Errorf("after the modal: feedback %q, rejections %d", s2.LastFeedback, s2.RejectionCount)
	}

	// The decided version's Revise button now says what happened instead.
	late := e.fd.click(alice, plan, "plan:r:"+s.ApprovalID)
	cb = e.waitCallback(late)
	var msg struct {
		Content string `json:"content"`
		Flags   int    `json:"flags"`
	}
	_ = json.Unmarshal(cb.Data, &msg)
	if cb.Type != 4 || msg.Flags != 64 || !strings.Contains(msg.Content, "sent back for revision by Alice; nothing changed") {
		t.Errorf("a late Revise click got type %d %q flags %d, want an ephemeral note of the decision", cb.Type, msg.Content, msg.Flags)
	}
}

func TestStaleAndForeignButtons(t *testing.T) {
	e := newEnv(t)
	plan, s := e.proposePlan("Docs cleanup", "Reword intro")
	e.Model.Push(sid("C1"), channeltest.Proposal("Docs cleanup v2", "Reword intro", "Fix typos"))
	e.fd.say("C1", alice, "/plan revise add typo fixes", true)
	e.waitPlan("C1", "-v2.md")
	s2 := e.waitPhase("C1", core.PhaseAwaitingApproval)
	e.Idle()

	stale := e.fd.click(alice, plan, "plan:a:"+s.ApprovalID)
	e.waitCallback(stale)
	e.Idle()
	f := e.followups(stale)
	if len(f) != 1 || f[0].Flags&64 == 0 || !strings.Contains(f[0].Content, "v1") || !strings.Contains(f[0].Content, "nothing changed") {
		t.Errorf("the stale Accept got %q, want one ephemeral follow-up saying nothing changed", contents(f))
	}
	if now := e.waitPhase("C1", core.PhaseAwaitingApproval); now.ApprovalID != s2.ApprovalID {
		t.Errorf("pending approval %q after a stale click, want v2's %q", now.ApprovalID, s2.ApprovalID)
	}

	for _, id := range []string{"other-app:button", "plan:a:bad id!", "plan:q:abc:0", "plan:m:" + s2.ApprovalID} {
		click := e.fd.click(alice, plan, id)
		cb := e.waitCallback(click)
		var msg struct {
			Content string `json:"content"`
			Flags   int    `json:"flags"`
		}
		_ = json.Unmarshal(cb.Data, &msg)
		if cb.Type != 4 || msg.Flags != 64 || msg.Content != replyInvalid {
			t.Errorf("button %q got type %d %q flags %d, want the ephemeral %q", id, cb.Type, msg.Content, msg.Flags, replyInvalid)
		}
	}
	e.Idle()
	if now := e.waitPhase("C1", core.PhaseAwaitingApproval); now.ApprovalID != s2.ApprovalID {
		t.Errorf("foreign buttons changed the session: approval %q", now.ApprovalID)
	}
}

func TestNonApprover(t *testing.T) {
	e := newEnv(t)
	plan, s := e.proposePlan("Docs cleanup", "Reword intro")

	click := e.fd.click(bob, plan, "plan:a:"+s.ApprovalID)
	e.waitCallback(click)
	e.Idle()
	f := e.followups(click)
	if len(f) != 1 || f[0].Flags&64 == 0 || !strings.Contains(f[0].Content, "Only approvers can decide on plans here (Bob is not one)") {
		t.Errorf("bob's Accept got %q, want one ephemeral refusal", contents(f))
	}
	cmd := e.fd.command("C1", bob, "accept", "", "")
	e.waitCallback(cmd)
	e.Idle()
	if f := e.followups(cmd); len(f) != 1 || !strings.Contains(f[0].Content, "Only approvers") {
		t.Errorf("bob's /plan accept got %q, want the refusal as the command's answer", contents(f))
	}
	if now := e.waitPhase("C1", core.PhaseAwaitingApproval); now.ApprovalID != s.ApprovalID {
		t.Errorf("a non-approver changed the session: approval %q", now.ApprovalID)
	}
	if m := e.msgByID(plan.ID); len(buttonsOf(m)) != 3 {
		t.Errorf("plan buttons after refusals %q, want all three still there", buttonsOf(m))
	}
}

func TestDuplicateInteractionHandledOnce(t *testing.T) {
	e := newEnv(t)
	plan, s := e.proposePlan("Docs cleanup", "Reword intro")
	e.Model.Push(sid("C1"), channeltest.Progress(map[string]string{"Reword intro": "completed"}), core.ModelResponse{Text: "Finished."})

	// The same INTERACTION_CREATE twice, as a replaying gateway would send it.
	click := e.fd.click(alice, plan, "plan:a:"+s.ApprovalID)
	e.fd.gw.mu.Lock()
	raw := e.fd.gw.log[len(e.fd.gw.log)-1]
	e.fd.gw.mu.Unlock()
	e.fd.dispatch(raw.t, raw.d)

	e.fd.waitText("C1", "Finished.")
	e.waitPhase("C1", core.PhaseOff)
	e.Idle()
	if cbs := e.fd.callbacksOf(click); len(cbs) != 1 {
		t.Errorf("the interaction got %d callbacks, want 1", len(cbs))
	}
	accepted := 0
	for _, m := range e.fd.all() {
		if strings.Contains(m.Content, "Accepted plan v1") {
			accepted++
		}
	}
	if accepted != 1 {
		t.Errorf("%d messages say the plan was accepted, want 1", accepted)
	}
}

func TestQuestionOptionButtons(t *testing.T) {
	e := newEnv(t)
	e.Model.Push(sid("C1"),
		channeltest.ToolCall("ask_user_question", map[string]any{"question": "Which colour?", "options": []string{"Red", "Blue"}}),
		core.ModelResponse{Text: "Blue it is."})
	e.fd.say("C1", alice, "/plan on paint the shed", true)
	q := e.fd.waitText("C1", "Which colour?")
	s := e.waitPhase("C1", core.PhasePlanning)
	e.Idle()
	if s.Question == nil {
		t.Fatal("no pending question")
	}
	want := []string{"plan:q:" + s.Question.ID + ":1", "plan:q:" + s.Question.ID + ":2"}
	if got := buttonsOf(q); !slices.Equal(got, want) {
		t.Fatalf("question buttons %q, want %q", got, want)
	}
	click := e.fd.click(alice, q, want[1])
	e.fd.waitText("C1", "Blue it is.")
	e.Idle()
	if cb := e.fd.callbacksOf(click); len(cb) != 1 || cb[0].Type != 6 {
		t.Errorf("the option click got callbacks %+v, want one deferred update", cb)
	}
	if s := e.waitPhase("C1", core.PhasePlanning); s.Question != nil {
		t.Errorf("question %+v still pending after the answer", s.Question)
	}

	again := e.fd.click(alice, q, want[0])
	e.waitCallback(again)
	e.Idle()
	if f := e.followups(again); len(f) != 1 || f[0].Flags&64 == 0 || !strings.Contains(f[0].Content, "already answered") {
		t.Errorf("a second answer got %q, want an ephemeral note that the question is closed", contents(f))
	}
}

func TestShowCommandResendsPlanAndDecisionRetiresBoth(t *testing.T) {
	e := newEnv(t)
	plan, _ := e.proposePlan("Docs cleanup", "Reword intro")
	id := e.fd.command("C1", bob, "show", "", "")
	e.waitCallback(id)
	e.Idle()
	answer := e.followups(id)
	if len(answer) != 1 || answer[0].Content != "Plan v1 — Docs cleanup (pending)" {
		t.Errorf("the /plan show answer %q, want the plan's first line", contents(answer))
	}
	var again shownMsg
	for _, m := range e.fd.shown("C1") {
		if m.ID != plan.ID && len(m.Files) == 1 && strings.HasSuffix(m.Files[0].Name, "-v1.md") {
			again = m
		}
	}
	if again.ID == "" || len(buttonsOf(again)) != 3 {
		t.Fatalf("the plan was not sent again with its file and buttons: %q", contents(e.fd.shown("C1")))
	}

	e.Model.Push(sid("C1"), core.ModelResponse{Text: "Starting."})
	e.fd.say("C1", alice, "/plan accept", true)
	e.waitPhase("C1", core.PhaseExecuting)
	e.fd.waitText("C1", "Starting.")
	e.Idle()
	for _, m := range []shownMsg{e.msgByID(plan.ID), e.msgByID(again.ID)} {
		if len(buttonsOf(m)) != 0 || !strings.Contains(m.Content, "accepted by Alice") {
			t.Errorf("message %s after the decision: %q with buttons %q", m.ID, m.Content, buttonsOf(m))
		}
	}
}

func TestUnansweredCommandLosesPlaceholder(t *testing.T) {
	fd := newFakeDiscord(t)
	ch, err := newChannel(context.Background(), Config{Token: fd.token, APIURL: fd.URL()}, &channeltest.MemState{}, nil, testTuning())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	got := make(chan core.Message, 1)
	go func() {
		done <- ch.Run(ctx, channels.HandlerFunc(func(_ context.Context, m core.Message) error { got <- m; return nil }))
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	id := fd.command("C1", alice, "nudge", "text", "every 2h")
	m := <-got
	if m.ID != id || m.Text != "/plan nudge every 2h" || m.Sender.ID != alice.id || !m.Mentioned || m.Address != addr("C1", "") {
		t.Errorf("the command arrived as %+v", m)
	}
	fd.waitFor("the placeholder removed", func() bool {
		f := fd.all()
		return len(f) == 1 && f[0].Deleted
	})
	if cb := fd.callbacksOf(id); len(cb) != 1 || cb[0].Type != 5 {
		t.Errorf("callbacks %+v, want one deferred message", cb)
	}
}

func TestEditLongerThanOneMessage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	to := addr("C1", "")
	id, err := e.Channel.Send(ctx, core.Reply{To: to, Kind: core.ReplyProgress, Text: "checklist start"})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("word ", 700) + "LAST"
	if err := e.Channel.Edit(ctx, id, core.Reply{To: to, Kind: core.ReplyProgress, Text: long}); err != nil {
		t.Fatal(err)
	}
	if m := e.msgByID(id); m.Edits != 1 || !strings.HasPrefix(m.Content, "word word") || channels.UTF16Len(m.Content) > 2000 {
		t.Errorf("edited message %.40q (%d edits)", m.Content, m.Edits)
	}
	e.fd.waitText("C1", "LAST")
	if err := e.Channel.Edit(ctx, "424242", core.Reply{To: to, Text: "x"}); err == nil {
		t.Error("editing a message Discord does not know succeeded")
	}
	if err := e.Channel.Edit(ctx, id, core.Reply{To: to, Text: "  "}); err == nil {
		t.Error("editing to an empty text succeeded")
	}
}

// The Revise modal's step selector: a short optional field whose placeholder lists the
// version's steps. A number makes the feedback a comment on that step (stored, the version
// still pending); a field that is no number is refused and changes nothing.
func TestReviseModalStepField(t *testing.T) {
	e := newEnv(t)
	plan, s := e.proposePlan("Docs cleanup", "Reword intro", "Fix typos")
	cb := e.waitCallback(e.fd.click(alice, plan, "plan:r:"+s.ApprovalID))
	var modal struct {
		CustomID   string `json:"custom_id"`
		Components []struct {
			Components []struct {
				Type        int    `json:"type"`
				CustomID    string `json:"custom_id"`
				Style       int    `json:"style"`
				Label       string `json:"label"`
				Placeholder string `json:"placeholder"`
				Required    bool   `json:"required"`
			} `json:"components"`
		} `json:"components"`
	}
	if err := json.Unmarshal(cb.Data, &modal); err != nil {
		t.Fatal(err)
	}
	if len(modal.Components) != 2 {
		t.Fatalf("modal rows %s, want feedback and step", cb.Data)
	}
	f := modal.Components[1].Components[0]
	if f.Type != 4 || f.CustomID != "step" || f.Style != 1 || f.Required || f.Placeholder != "1. Reword intro · 2. Fix typos" || !strings.Contains(f.Label, "1–2") {
		t.Fatalf("step field %+v", f)
	}

	bad := e.fd.submitStep("C1", alice, modal.CustomID, "fix all typos", "two")
	var msg struct {
		Content string `json:"content"`
		Flags   int    `json:"flags"`
	}
	cb = e.waitCallback(bad)
	_ = json.Unmarshal(cb.Data, &msg)
	if cb.Type != 4 || msg.Flags != 64 || !strings.Contains(msg.Content, "The step must be a number like 2") {
		t.Fatalf("a step field that is no number got type %d %q", cb.Type, msg.Content)
	}

	if cb := e.waitCallback(e.fd.submitStep("C1", alice, modal.CustomID, "fix all typos", " 2 ")); cb.Type != 6 {
		t.Errorf("the comment's submit was answered with type %d, want 6", cb.Type)
	}
	e.Eventually("the comment", func() bool {
		p, err := e.Store.Plan(t.Context(), s.PlanID)
		return err == nil && len(p.Run.Comments) == 1
	})
	e.Idle()
	p, _ := e.Store.Plan(t.Context(), s.PlanID)
	if c := p.Run.Comments[0]; p.Status != core.PlanPending || c.Steps[0] != 2 || c.Text != "fix all typos" || c.StepTexts[0] != "Fix typos" {
		t.Fatalf("stored v1: %s %+v", p.Status, p.Run.Comments)
	}
	if s2 := e.waitPhase("C1", core.PhaseAwaitingApproval); s2.RejectionCount != 0 {
		t.Errorf("the comment sent the plan back: %+v", s2)
	}
}
