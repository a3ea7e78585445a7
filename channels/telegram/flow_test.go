package telegram

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

var (
	alice = user{id: 11, name: "alice"}
	bob   = user{id: 22, name: "bob"}
)

const (
	group   = int64(-1001)
	forum   = int64(-2001)
	private = int64(501)
)

// keyboard decodes a message's inline keyboard into its callback data.
func keyboardData(t *testing.T, m shownMsg) []string {
	t.Helper()
	if normMarkup(m.Markup) == "" {
		return nil
	}
	var kb inlineKeyboard
	if err := json.Unmarshal([]byte(m.Markup), &kb); err != nil {
		t.Fatalf("message %d: reply_markup %q: %v", m.ID, m.Markup, err)
	}
	var out []string
	for _, row := range kb.InlineKeyboard {
		for _, b := range row {
			out = append(out, b.CallbackData)
		}
	}
	return out
}

// waitDoc waits for the document whose file name matches pattern in chat.
func (e *env) waitDoc(chat int64, pattern string) shownMsg {
	e.TB.Helper()
	re := regexp.MustCompile(pattern)
	var found shownMsg
	e.api.waitFor("a document matching "+pattern, func() bool {
		for _, m := range e.api.messagesL(chat) {
			if m.Doc != "" && re.MatchString(m.Doc) {
				found = *m
				return true
			}
		}
		return false
	})
	return found
}

// msg returns message id of chat as it is shown now.
func (e *env) msg(chat int64, id int) shownMsg {
	e.TB.Helper()
	for _, m := range e.api.messages(chat) {
		if m.ID == id {
			return m
		}
	}
	e.TB.Fatalf("no message %d in chat %d", id, chat)
	return shownMsg{}
}

func countContaining(ms []shownMsg, s string) int {
	n := 0
	for _, m := range ms {
		if strings.Contains(m.Text, s) {
			n++
		}
	}
	return n
}

func TestGroupPlanToCompletionWithButtons(t *testing.T) {
	e := newEnv(t)
	sid := e.sessionID(group)
	e.Model.Push(sid, channeltest.Proposal("Docs cleanup", "Reword intro", "Fix links"),
		channeltest.Progress(map[string]string{"Reword intro": "completed", "Fix links": "in_progress"}),
		channeltest.Progress(map[string]string{"Fix links": "completed"}),
		core.ModelResponse{Text: "All done: the intro is reworded and the links work."})

	e.api.say(group, alice, "/plan@PlanGateBot on tidy the docs")
	doc := e.waitDoc(group, `^plan-.*docs-cleanup-v1\.md$`)
	s := e.waitPhase(group, core.PhaseAwaitingApproval)
	if s.Owner != "11" {
		t.Errorf("session owner %q, want alice's user id 11", s.Owner)
	}
	if !strings.HasPrefix(doc.Text, "Plan v1 — Docs cleanup (2 steps)") || !strings.Contains(doc.Text, "Summary of Docs cleanup") {
		t.Errorf("caption %q, want the title line and the summary", doc.Text)
	}
	if !strings.HasPrefix(doc.Raw, "<b>Plan v1") {
		t.Errorf("caption markup %q, want the title in bold", doc.Raw)
	}
	want := []string{"a:" + s.ApprovalID, "r:" + s.ApprovalID, "u:" + s.ApprovalID}
	if got := keyboardData(t, doc); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("plan buttons %q, want %q", got, want)
	}
	if menu := e.api.callsOf("setMyCommands"); len(menu) == 0 || !strings.Contains(menu[0].Params["commands"], `"command":"plan"`) {
		t.Errorf("setMyCommands calls %+v, want the /plan menu", menu)
	}

	qid := e.api.click(group, alice, doc.ID, "a:"+s.ApprovalID)
	if toast := e.api.waitAnswer(qid); !strings.Contains(toast, "accepted by alice") {
		t.Errorf("toast %q, want it to say the plan was accepted by alice", toast)
	}
	e.api.waitText(group, "Done: 2 of 2 steps")
	e.api.waitText(group, "All done: the intro is reworded")
	e.waitPhase(group, core.PhaseOff)
	e.Idle()

	decided := e.msg(group, doc.ID)
	if len(keyboardData(t, decided)) != 0 {
		t.Errorf("plan message still has buttons after the decision: %s", decided.Markup)
	}
	if !strings.Contains(decided.Text, "Plan v1 — Docs cleanup") || !strings.Contains(decided.Text, "accepted by alice") {
		t.Errorf("caption after the decision %q, want the plan and who accepted it", decided.Text)
	}
	msgs := e.api.messages(group)
	if n := countContaining(msgs, "steps done"); n != 1 {
		t.Errorf("%d progress messages, want one edited in place", n)
	}
	for _, m := range msgs {
		if strings.Contains(m.Text, "steps done") && (m.Edits == 0 || !strings.Contains(m.Text, "2 of 2 steps done")) {
			t.Errorf("progress message %q edited %d times, want it edited to 2 of 2", m.Text, m.Edits)
		}
	}
	if len(e.api.callsOf("sendChatAction")) == 0 {
		t.Error("no typing indicator was shown while the agent worked")
	}
}

func TestReviseThroughForceReplyInForumTopic(t *testing.T) {
	e := newEnv(t)
	const topic = 7
	sid := e.addr(forum, topic).SessionID()
	e.Model.Push(sid, channeltest.Proposal("Docs cleanup", "Reword intro"), channeltest.Proposal("Docs cleanup with typos", "Reword intro", "Fix typos"))

	e.api.say(forum, alice, "/plan on tidy the docs", inThread(topic))
	doc := e.waitDoc(forum, `-v1\.md$`)
	if doc.Thread != topic {
		t.Errorf("plan posted in thread %d, want topic %d", doc.Thread, topic)
	}
	s, err := e.Store.Session(context.Background(), sid)
	if err != nil {
		t.Fatalf("the topic is not its own session %s: %v", sid, err)
	}

	qid := e.api.click(forum, alice, doc.ID, "r:"+s.ApprovalID)
	if toast := e.api.waitAnswer(qid); toast != toastRevise {
		t.Errorf("toast %q, want %q", toast, toastRevise)
	}
	prompt := e.api.waitText(forum, "What should change in plan v1")
	if !strings.Contains(prompt.Text, `"Docs cleanup"`) || !strings.HasPrefix(prompt.Text, "@alice ") {
		t.Errorf("prompt %q, want it to name the plan and the person who clicked", prompt.Text)
	}
	if !strings.Contains(prompt.Markup, `"force_reply":true`) || prompt.Replied != doc.ID || prompt.Thread != topic {
		t.Errorf("prompt markup %s, reply to %d, thread %d: want a ForceReply to the plan in the topic", prompt.Markup, prompt.Replied, prompt.Thread)
	}
	v1Approval := s.ApprovalID
	// A person reads the prompt before replying; the test waits for the adapter to note it.
	e.WaitState(e.account(), promptKey(forum, prompt.ID))

	e.api.say(forum, alice, "also fix typos", replyTo(prompt.ID), inThread(topic))
	e.waitDoc(forum, `-v2\.md$`)
	e.Idle()
	s, err = e.Store.Session(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	if s.Phase != core.PhaseAwaitingApproval || s.RejectionCount != 1 || s.LastFeedback != "also fix typos" {
		t.Errorf("session phase %s, rejections %d, feedback %q; want v2 pending after one revision with the reply as feedback", s.Phase, s.RejectionCount, s.LastFeedback)
	}
	old := e.msg(forum, doc.ID)
	if len(keyboardData(t, old)) != 0 || !strings.Contains(old.Text, "sent back for revision by alice") {
		t.Errorf("v1 after the revision: caption %q, markup %s; want the decision and no buttons", old.Text, old.Markup)
	}

	// A late Revise click on v1 (an old client still shows the buttons) says what happened.
	qid = e.api.click(forum, alice, doc.ID, "r:"+v1Approval)
	if toast := e.api.waitAnswer(qid); !strings.Contains(toast, "sent back for revision") {
		t.Errorf("late revise toast %q, want it to say v1 was already sent back", toast)
	}
}

func TestStaleAcceptAfterNewVersion(t *testing.T) {
	e := newEnv(t)
	sid := e.sessionID(private)
	e.Model.Push(sid, channeltest.Proposal("First try", "One"), channeltest.Proposal("Second try", "One", "Two"))
	e.api.say(private, alice, "/plan on something")
	v1 := e.waitDoc(private, `-v1\.md$`)
	s1 := e.waitPhase(private, core.PhaseAwaitingApproval)
	// A comment while v1 waits makes the agent propose again: v2 supersedes v1.
	e.api.say(private, alice, "it needs a second step")
	e.waitDoc(private, `-v2\.md$`)
	e.Idle()
	s2 := e.session(private)
	if s2.ApprovalID == s1.ApprovalID || s2.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("setup: v2 not pending (phase %s)", s2.Phase)
	}

	qid := e.api.click(private, alice, v1.ID, "a:"+s1.ApprovalID)
	if toast := e.api.waitAnswer(qid); !strings.Contains(toast, "Plan v1 was superseded by v2") {
		t.Errorf("toast %q, want it to say v1 was superseded by v2", toast)
	}
	e.Idle()
	s3 := e.session(private)
	if s3.Phase != core.PhaseAwaitingApproval || s3.ApprovalID != s2.ApprovalID {
		t.Errorf("after the stale click: phase %s approval %s, want v2 still pending (%s)", s3.Phase, s3.ApprovalID, s2.ApprovalID)
	}
}

func TestNonApproverClickChangesNothing(t *testing.T) {
	e := newEnv(t, func(e *env) { e.Core.Approvers = []string{"telegram:11"} })
	e.Model.Push(e.sessionID(group), channeltest.Proposal("Guarded", "Only step"))
	e.api.say(group, alice, "/plan@PlanGateBot on guarded work")
	doc := e.waitDoc(group, `-v1\.md$`)
	s := e.waitPhase(group, core.PhaseAwaitingApproval)

	qid := e.api.click(group, bob, doc.ID, "a:"+s.ApprovalID)
	if toast := e.api.waitAnswer(qid); !strings.Contains(toast, "Only approvers") || !strings.Contains(toast, "bob") {
		t.Errorf("toast %q, want a refusal naming bob", toast)
	}
	e.Idle()
	if got := e.session(group); got.Phase != core.PhaseAwaitingApproval || got.ApprovalID != s.ApprovalID {
		t.Errorf("after bob's click: phase %s, want the plan still pending", got.Phase)
	}
	if len(keyboardData(t, e.msg(group, doc.ID))) != 3 {
		t.Error("a refused click removed the plan's buttons")
	}

	// A garbled button changes nothing either, and is answered.
	qid = e.api.click(group, alice, doc.ID, "x:not-ours")
	if toast := e.api.waitAnswer(qid); toast != toastInvalid {
		t.Errorf("garbled button toast %q, want %q", toast, toastInvalid)
	}
	// Alice may decide.
	qid = e.api.click(group, alice, doc.ID, "a:"+s.ApprovalID)
	if toast := e.api.waitAnswer(qid); !strings.Contains(toast, "accepted by alice") {
		t.Errorf("approver's toast %q", toast)
	}
}

func TestQuestionButtonsAnswerByNumber(t *testing.T) {
	e := newEnv(t)
	sid := e.sessionID(private)
	ask := func(q string, opts ...string) core.ModelResponse {
		return channeltest.ToolCall("ask_user_question", map[string]any{"question": q, "options": opts})
	}
	e.Model.Push(sid, ask("Which docs?", "README only", "Everything"), core.ModelResponse{Text: "Fine."},
		ask("Which tone?", "Formal", "Casual"))
	e.api.say(private, alice, "/plan on tidy")
	first := e.api.waitText(private, "Question: Which docs?")
	if got := keyboardData(t, first); strings.Join(got, " ") != "q:1 q:2" {
		t.Fatalf("question buttons %q, want q:1 q:2", got)
	}
	qid := e.api.click(private, alice, first.ID, "q:2")
	if toast := e.api.waitAnswer(qid); !strings.Contains(toast, "Answer recorded: Everything") {
		t.Errorf("toast %q, want the recorded answer", toast)
	}
	e.api.say(private, alice, "and now?")
	e.api.waitText(private, "Question: Which tone?")
	e.Idle()

	// Option 2 of the first question must not answer the second one.
	qid = e.api.click(private, alice, first.ID, "q:2")
	if toast := e.api.waitAnswer(qid); toast != toastQuestionOld {
		t.Errorf("stale question toast %q, want %q", toast, toastQuestionOld)
	}
	e.Idle()
	if s := e.session(private); s.Question == nil || s.Question.Text != "Which tone?" {
		t.Errorf("the open question changed after a stale click: %+v", s.Question)
	}
}
