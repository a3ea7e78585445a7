package slack

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

const (
	alice   = "U0ALICE"
	bob     = "U0BOB"
	general = "C0GENERAL"
	dmAlice = "D0ALICE"
)

// planMsg waits for the message carrying the buttons of approval in ch.
func (e *env) planMsg(ch, approval string) shownMsg {
	e.TB.Helper()
	var found shownMsg
	e.api.waitFor("the buttons of "+approval, func() bool {
		for _, m := range e.api.msgs {
			if m.Channel == ch && slices.Contains(m.buttons(), actionAccept+"="+approval) {
				found = *m
				return true
			}
		}
		return false
	})
	return found
}

// current returns message ts of ch as it is shown now.
func (e *env) current(ch, ts string) shownMsg {
	e.TB.Helper()
	for _, m := range e.api.messages(ch) {
		if m.TS == ts {
			return m
		}
	}
	e.TB.Fatalf("no message %s in %s", ts, ch)
	return shownMsg{}
}

func TestMentionPlanAcceptToCompletion(t *testing.T) {
	e := newEnv(t)
	e.api.name(alice, "alice")
	thread := e.api.userTS() // a top-level mention starts its own thread
	sid := e.sid(general, thread)
	e.Model.Push(sid, channeltest.Proposal("Docs cleanup", "Reword intro", "Fix links"),
		channeltest.Progress(map[string]string{"Reword intro": "completed", "Fix links": "in_progress"}),
		channeltest.Progress(map[string]string{"Fix links": "completed"}),
		core.ModelResponse{Text: "All done: the intro is reworded and the links work."})
	e.api.mentionTS(thread, general, alice, "/plan on tidy the docs", "")

	s := e.waitPhase(general, thread, core.PhaseAwaitingApproval)
	if s.Owner != alice {
		t.Errorf("session owner %q, want alice's user id", s.Owner)
	}
	file := e.api.waitFile(general, "docs-cleanup-v1.md")
	if file.Thread != thread {
		t.Errorf("plan file shared in thread %q, want %q", file.Thread, thread)
	}
	plan := e.planMsg(general, s.ApprovalID)
	want := []string{actionAccept + "=" + s.ApprovalID, actionRevise + "=" + s.ApprovalID, actionAuto + "=" + s.ApprovalID}
	if got := plan.buttons(); !slices.Equal(got, want) {
		t.Fatalf("plan buttons %q, want %q", got, want)
	}
	if !strings.Contains(plan.shown(), "Plan v1 — Docs cleanup") || !strings.Contains(plan.shown(), "Summary of Docs cleanup") {
		t.Errorf("plan message %q, want the title line and the summary", plan.shown())
	}
	e.api.mu.Lock()
	var uploaded []byte
	for _, data := range e.api.uploads {
		uploaded = data
	}
	e.api.mu.Unlock()
	if !strings.HasPrefix(string(uploaded), "# Docs cleanup") {
		t.Errorf("uploaded plan file starts %q, want the markdown plan", firstLine(string(uploaded)))
	}

	env, _ := e.api.click(plan, alice, actionAccept, s.ApprovalID)
	e.api.waitAck(env)
	e.api.waitText(general, "Done: 2 of 2 steps")
	e.api.waitText(general, "All done: the intro is reworded")
	e.waitPhase(general, thread, core.PhaseOff)
	e.Idle()

	decided := e.current(general, plan.TS)
	if len(decided.buttons()) != 0 {
		t.Errorf("decided plan still has buttons %q", decided.buttons())
	}
	if !strings.Contains(decided.shown(), "accepted by alice") || !strings.Contains(decided.shown(), "Plan v1 — Docs cleanup") {
		t.Errorf("decided plan shows %q, want the plan and who accepted it", decided.shown())
	}
	// Progress is one message updated in place.
	var checklists int
	for _, m := range e.api.messages(general) {
		if strings.Contains(m.shown(), "steps done") || slices.ContainsFunc(m.Edits, func(s string) bool { return strings.Contains(s, "steps done") }) {
			checklists++
			if len(m.Edits) == 0 {
				t.Errorf("the checklist was never updated in place: %q", m.shown())
			}
		}
	}
	if checklists != 1 {
		t.Errorf("%d checklist messages, want 1 updated in place", checklists)
	}
	// Everything the bot said is in the session's thread.
	for _, m := range e.api.messages(general) {
		if m.Thread != thread {
			t.Errorf("message %q posted in thread %q, want %q", m.shown(), m.Thread, thread)
		}
	}
	if n := len(e.api.ephemeralsFor(alice)); n != 0 {
		t.Errorf("alice got %d ephemeral messages, want none on the happy path", n)
	}
}

func TestDirectMessageThreads(t *testing.T) {
	e := newEnv(t)
	first := e.api.dm(dmAlice, alice, "hello there", "")
	e.api.waitText(dmAlice, "ok")
	reply := e.api.messages(dmAlice)[0]
	if reply.Thread != first.TS {
		t.Errorf("reply in thread %q, want the DM's own ts %q", reply.Thread, first.TS)
	}
	s, err := e.Store.Session(t.Context(), e.sid(dmAlice, first.TS))
	if err != nil {
		t.Fatalf("no session for the DM's thread: %v", err)
	}
	if s.Address.Thread != first.TS {
		t.Errorf("session thread %q, want %q", s.Address.Thread, first.TS)
	}
	if got := e.Model.LastUser(s.ID); got != "hello there" {
		t.Errorf("the model saw %q, want the DM text", got)
	}
}

func TestSlashRevise(t *testing.T) {
	e := newEnv(t)
	e.api.name(alice, "alice")
	thread := e.api.userTS()
	sid := e.sid(general, thread)
	e.Model.Push(sid, channeltest.Proposal("Changelog", "Create CHANGELOG.md"), channeltest.Proposal("Changelog with tests", "Create CHANGELOG.md", "Add a test"))
	e.api.mentionTS(thread, general, alice, "/plan on add a changelog", "")
	s := e.waitPhase(general, thread, core.PhaseAwaitingApproval)
	v1 := e.planMsg(general, s.ApprovalID)

	// Inside the thread (Slack sends its thread_ts): that thread's session.
	env := e.api.slash(general, alice, "revise add a test &amp; keep it short", thread)
	e.api.waitAck(env)
	e.api.waitText(general, "Sent plan v1 back for revision")
	s2 := e.waitPhase(general, thread, core.PhaseAwaitingApproval)
	if s2.ApprovalID == s.ApprovalID {
		t.Fatal("no new plan version after the revision")
	}
	if got := e.Model.LastUser(sid); !strings.Contains(got, "add a test & keep it short") {
		t.Errorf("the model saw %q, want the feedback, unescaped", got)
	}
	if !strings.Contains(e.current(general, v1.TS).shown(), "sent back for revision by alice") {
		t.Errorf("v1 message shows %q, want the revision and who asked", e.current(general, v1.TS).shown())
	}

	// At the top level: the channel's most recent session, and a note says which.
	env = e.api.slash(general, alice, "status", "")
	e.api.waitAck(env)
	status := e.api.waitText(general, "phase: awaiting_approval")
	if status.Thread != thread {
		t.Errorf("status answered in thread %q, want the recent session's %q", status.Thread, thread)
	}
	note := e.api.waitEphemeral(alice, "most recent plangate session")
	if note.Thread != "" || !strings.Contains(note.Text, "https://plangate-test.slack.com/archives/"+general+"/p") {
		t.Errorf("pointer note %+v, want it at top level with a link to the thread", note)
	}
}

func TestSlashTopLevel(t *testing.T) {
	e := newEnv(t)
	e.api.name(alice, "alice")

	// Nothing here yet: an ephemeral note says how to start, with help for /plan help.
	e.api.waitAck(e.api.slash(general, alice, "help", ""))
	help := e.api.waitEphemeral(alice, "no plangate session")
	if !strings.Contains(help.Text, "/plan accept") {
		t.Errorf("help note %q, want the command list", help.Text)
	}
	if e.Model.CallCount() != 0 || len(e.api.messages(general)) != 0 {
		t.Fatalf("nothing should have been posted; messages %d, model calls %d", len(e.api.messages(general)), e.Model.CallCount())
	}

	// /plan on <goal> at top level starts a thread of its own.
	e.api.waitAck(e.api.slash(general, alice, "on write release notes", ""))
	root := e.api.waitText(general, "started by alice")
	if root.Thread != "" || !strings.Contains(root.shown(), "write release notes") {
		t.Fatalf("thread root %+v, want a top-level message naming the goal", root)
	}
	e.waitPhase(general, root.TS, core.PhasePlanning)
	on := e.api.waitText(general, "Plan mode is on")
	if on.Thread != root.TS {
		t.Errorf("reply in thread %q, want the new root %q", on.Thread, root.TS)
	}
	e.Idle()

	// A refusal of a top-level command is shown to its author, where they typed it.
	e.api.waitAck(e.api.slash(general, alice, "accept", ""))
	refusal := e.api.waitEphemeral(alice, "There is no plan to accept")
	if refusal.Thread != "" {
		t.Errorf("refusal in thread %q, want it at the top level", refusal.Thread)
	}
	for _, m := range e.api.messages(general) {
		if strings.Contains(m.shown(), "There is no plan to accept") {
			t.Errorf("the refusal was also posted for everyone: %q", m.shown())
		}
	}
}

func TestReviseModal(t *testing.T) {
	e := newEnv(t)
	e.api.name(alice, "alice")
	thread := e.api.userTS()
	sid := e.sid(general, thread)
	e.Model.Push(sid, channeltest.Proposal("Tidy", "Sort imports"), channeltest.Proposal("Tidy more", "Sort imports", "Remove dead code"))
	e.api.mentionTS(thread, general, alice, "/plan on tidy", "")
	s := e.waitPhase(general, thread, core.PhaseAwaitingApproval)
	plan := e.planMsg(general, s.ApprovalID)

	_, trigger := e.api.click(plan, alice, actionRevise, s.ApprovalID)
	v := e.api.waitView(1)
	if v.TriggerID != trigger || v.View.CallbackID != reviseCallback {
		t.Fatalf("views.open with trigger %q callback %q, want the click's trigger %q and %q", v.TriggerID, v.View.CallbackID, trigger, reviseCallback)
	}
	var meta modalMeta
	if err := json.Unmarshal([]byte(v.View.PrivateMetadata), &meta); err != nil || meta.Approval != s.ApprovalID || meta.Thread != thread {
		t.Fatalf("modal metadata %q (%v), want the approval and thread", v.View.PrivateMetadata, err)
	}
	if got := s.Phase; got != core.PhaseAwaitingApproval {
		t.Fatalf("phase %s after opening the modal", got)
	}

	// An empty submission keeps the modal open with a hint, and changes nothing.
	a := e.api.waitAck(e.api.submit(v, alice, "   "))
	if !strings.Contains(string(a.Payload), `"response_action":"errors"`) || !strings.Contains(string(a.Payload), feedbackBlock) {
		t.Errorf("ack of an empty submission %s, want errors on the feedback field", a.Payload)
	}

	a = e.api.waitAck(e.api.submit(v, alice, "also remove dead code"))
	if len(a.Payload) != 0 && string(a.Payload) != "null" {
		t.Errorf("ack of a good submission carries %s, want none (the modal closes)", a.Payload)
	}
	e.api.waitText(general, "Sent plan v1 back for revision")
	s2 := e.waitPhase(general, thread, core.PhaseAwaitingApproval)
	if s2.RejectionCount != 1 || s2.LastFeedback != "also remove dead code" {
		t.Errorf("rejections %d feedback %q, want 1 and the modal's text", s2.RejectionCount, s2.LastFeedback)
	}
	if !strings.Contains(e.current(general, plan.TS).shown(), "sent back for revision by alice") {
		t.Errorf("v1 shows %q", e.current(general, plan.TS).shown())
	}

	// Revise on the decided v1: said at once, no modal.
	e.api.click(e.current(general, plan.TS), alice, actionRevise, s.ApprovalID)
	e.api.waitEphemeral(alice, "sent back for revision by alice; nothing changed")
	if n := len(e.api.callsOf("views.open")); n != 1 {
		t.Errorf("views.open called %d times, want 1", n)
	}
}

// The Revise modal offers the version's steps in an optional static select: a step picked
// makes the feedback a comment on it, stored on the pending version, which stays pending;
// the next submission without a step sends the plan back with it.
func TestReviseModalStepSelector(t *testing.T) {
	e := newEnv(t)
	e.api.name(alice, "alice")
	thread := e.api.userTS()
	sid := e.sid(general, thread)
	e.Model.Push(sid, channeltest.Proposal("Tidy", "Sort imports", "Remove dead code"), channeltest.Proposal("Tidy more", "Sort imports", "Remove all dead code"))
	e.api.mentionTS(thread, general, alice, "/plan on tidy", "")
	s := e.waitPhase(general, thread, core.PhaseAwaitingApproval)
	plan := e.planMsg(general, s.ApprovalID)

	e.api.click(plan, alice, actionRevise, s.ApprovalID)
	v := e.api.waitView(1)
	var sel *fakeBlock
	for i, b := range v.View.Blocks {
		if b.BlockID == stepBlock {
			sel = &v.View.Blocks[i]
		}
	}
	if sel == nil || sel.Element == nil || sel.Element.Type != "static_select" || !sel.Optional {
		t.Fatalf("the modal has no optional static step select: %+v", v.View.Blocks)
	}
	if got := sel.Element.Options; len(got) != 2 || got[0].Value != "1" || got[0].Text.Text != "1. Sort imports" || got[1].Text.Text != "2. Remove dead code" {
		t.Fatalf("step options %+v", got)
	}

	e.api.waitAck(e.api.submitStep(v, alice, "only the unused helpers", "2"))
	e.api.waitText(general, "Comment c1 on step 2")
	p, err := e.Store.Plan(t.Context(), s.PlanID)
	if err != nil {
		t.Fatal(err)
	}
	if cs := p.Run.Comments; p.Status != core.PlanPending || len(cs) != 1 || cs[0].Steps[0] != 2 || cs[0].Text != "only the unused helpers" || cs[0].ByName != "alice" {
		t.Fatalf("stored v1: %s %+v", p.Status, cs)
	}
	if got := e.waitPhase(general, thread, core.PhaseAwaitingApproval); got.RejectionCount != 0 {
		t.Fatalf("a comment sent the plan back: %+v", got)
	}

	// A step that was never offered is no comment: the submission is plain feedback.
	e.api.click(plan, alice, actionRevise, s.ApprovalID)
	v = e.api.waitView(2)
	e.api.waitAck(e.api.submitStep(v, alice, "and keep the tests", "x"))
	e.api.waitText(general, "Sent plan v1 back for revision (1st time) with 1 comment (c1)")
	if p, _ := e.Store.Plan(t.Context(), s.PlanID); p.Status != core.PlanRevised || len(p.Run.Comments) != 1 || !p.Run.Comments[0].Sent {
		t.Errorf("v1 after the revise: %s %+v", p.Status, p.Run.Comments)
	}
}
