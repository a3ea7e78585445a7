package engine_test

// Regression tests for defects found in review. Each comment describes the defect; the
// test fails if it comes back.

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
)

func msg(chat, sender, text string) core.Message {
	return core.Message{Address: addr(chat), Sender: core.Person{ID: sender, Name: sender}, Text: text}
}

// R1: a /plan revise that will be REFUSED (phase planning: nothing to revise) still
// interrupts the running agent turn. A refusal must change nothing.
func TestRegressionRefusedReviseInterruptsPlanningTurn(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	var queued <-chan error
	var once sync.Once
	h.model.Hook(func(req core.ModelRequest) {
		once.Do(func() {
			queued = h.eng.Enqueue(context.Background(), msg("main", "local", "/plan revise make it shorter"))
		})
	})
	h.model.push(sid, calls(call("plan_status", map[string]any{})), text("investigation finished"))
	n := h.out.count()
	if err := h.eng.Handle(context.Background(), msg("main", "local", "look around")); err != nil {
		t.Fatal(err)
	}
	if err := <-queued; err != nil {
		t.Fatal(err)
	}
	all := joinTexts(h.out.since(n))
	t.Logf("replies:\n%s", all)
	if strings.Contains(all, "Stopped: /plan revise came in.") && strings.Contains(all, "no plan to revise") {
		t.Fatalf("a refused /plan revise interrupted the agent's planning turn")
	}
	// State, not prose: the turn ran to its end, the revise changed nothing and was
	// answered with a notice.
	if last := lastEntry(t, h, "main"); last.Role != core.RoleAssistant || last.Content != "investigation finished" {
		t.Fatalf("the turn did not finish: last transcript entry %s %q", last.Role, last.Content)
	}
	if s := h.session("main"); s.Phase != core.PhasePlanning || s.RejectionCount != 0 {
		t.Fatalf("the refused revise changed the session: phase %s, rejections %d", s.Phase, s.RejectionCount)
	}
	if got := replyKinds(h.out.since(n)); !slices.Contains(got, core.ReplyNotice) || slices.Contains(got, core.ReplyDecided) {
		t.Fatalf("reply kinds %v, want a notice and no decision", got)
	}
}

// lastEntry is the newest stored transcript entry of chat.
func lastEntry(t *testing.T, h *harness, chat string) core.ChatMessage {
	t.Helper()
	tr, err := h.st.Transcript(context.Background(), sessionID(chat), 1)
	if err != nil || len(tr) != 1 {
		t.Fatalf("reading the transcript: %v (%d entries)", err, len(tr))
	}
	return tr[0]
}

func replyKinds(rs []core.Reply) []core.ReplyKind {
	out := make([]core.ReplyKind, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Kind)
	}
	return out
}

// R1b: /plan off in phase off (refused: "already off") interrupts an ordinary chat turn.
func TestRegressionRefusedOffInterruptsChatTurn(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	var queued <-chan error
	var once sync.Once
	h.model.Hook(func(req core.ModelRequest) {
		once.Do(func() {
			queued = h.eng.Enqueue(context.Background(), msg("main", "local", "/plan off"))
		})
	})
	h.model.push(sid, calls(call("plan_status", map[string]any{})), text("here is your answer"))
	n := h.out.count()
	if err := h.eng.Handle(context.Background(), msg("main", "local", "hello")); err != nil {
		t.Fatal(err)
	}
	if err := <-queued; err != nil {
		t.Fatal(err)
	}
	all := joinTexts(h.out.since(n))
	t.Logf("replies:\n%s", all)
	if strings.Contains(all, "Stopped: /plan off came in.") && strings.Contains(all, "already off") {
		t.Fatalf("a refused /plan off interrupted the agent's turn")
	}
	if last := lastEntry(t, h, "main"); last.Role != core.RoleAssistant || last.Content != "here is your answer" {
		t.Fatalf("the turn did not finish: last transcript entry %s %q", last.Role, last.Content)
	}
	if got := replyKinds(h.out.since(n)); !slices.Contains(got, core.ReplyNotice) {
		t.Fatalf("the refused /plan off was not answered with a notice: %v", got)
	}
}

// R1c: a stale Revise button (of the already accepted version) interrupts execution and
// is then refused as "already decided".
func TestRegressionStaleReviseButtonInterruptsExecution(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	p := h.toPending("main", "Long")
	var queued <-chan error
	var once sync.Once
	h.model.Hook(func(req core.ModelRequest) {
		if strings.Contains(lastUser(req), "[PLAN_DECISION]: approved") {
			once.Do(func() {
				m := core.Message{Address: addr("main"), Sender: core.Person{ID: "local", Name: "local"},
					Action: &core.Action{Kind: core.ActionRevise, ApprovalID: p.ApprovalID, Value: "late click"}}
				queued = h.eng.Enqueue(context.Background(), m)
			})
		}
	})
	h.model.push(sid, calls(update(stepArg{Step: "First step", Status: "in_progress"})), text("working"))
	n := h.out.count()
	h.say("main", "local", "/plan accept")
	if err := <-queued; err != nil {
		t.Fatal(err)
	}
	all := joinTexts(h.out.since(n))
	t.Logf("replies:\n%s", all)
	if strings.Contains(all, "Stopped: a revision came in.") && strings.Contains(all, "already decided") {
		t.Fatalf("a stale (refused) Revise click stopped the executing plan")
	}
	if last := lastEntry(t, h, "main"); last.Role != core.RoleAssistant || last.Content != "working" {
		t.Fatalf("the executing turn did not finish: last transcript entry %s %q", last.Role, last.Content)
	}
	if s, st := h.session("main"), h.plan(p.ID).Status; s.Phase != core.PhaseExecuting || st != core.PlanAccepted {
		t.Fatalf("the stale click changed state: phase %s, plan %s", s.Phase, st)
	}
	if evs := h.events("main"); evs[len(evs)-1] != core.EventRefused {
		t.Fatalf("the stale click was not audited as refused: %v", evs)
	}
}

// R2: a bare "/plan accept" sent while v1 is pending, during an agent turn (a comment on
// v1), accepts v2, which the turn proposed after the person sent the command and which
// the person never saw.
func TestRegressionBareAcceptBindsToVersionProposedAfterward(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	v1 := h.toPending("main", "Docs")
	var queued <-chan error
	var once sync.Once
	h.model.Hook(func(req core.ModelRequest) {
		once.Do(func() {
			// The person accepts v1 while the agent is still thinking about their comment.
			queued = h.eng.Enqueue(context.Background(), msg("main", "local", "/plan accept"))
		})
	})
	h.model.push(sid, calls(propose("Rewrite everything", "Delete all docs")), text("ok"))
	h.say("main", "local", "looks good, maybe mention the FAQ")
	if err := <-queued; err != nil {
		t.Fatal(err)
	}
	ps := h.plans("main")
	t.Logf("plans: %v; replies:\n%s", planStatuses(ps), joinTexts(h.out.all()))
	if len(ps) == 2 && ps[0].ID == v1.ID && ps[0].Status == core.PlanSuperseded && ps[1].Status == core.PlanAccepted {
		t.Fatalf("/plan accept sent while v1 %q was pending accepted v2 %q, proposed after the command was sent", v1.Body.Title, ps[1].Body.Title)
	}
}

// R3: an accept followed at once by a revise: the revise interrupts the accept's turn before
// it drained the approval; the stale "[PLAN_DECISION]: approved" stays queued and reaches
// the model in the revision turn, next to "rejected".
func TestRegressionStaleApprovalInjectionAfterRevise(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	h.toPending("main", "Docs")
	gate := &gatedStore{Store: h.st, entered: make(chan struct{}), release: make(chan struct{})}
	gate.armed.Store(true)
	eng := h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: gate, Model: h.model, Out: h.out, Now: func() time.Time { return h.clock }}))
	a := eng.Enqueue(context.Background(), msg("main", "local", "/plan accept"))
	<-gate.entered // accept is inside its commit
	r := eng.Enqueue(context.Background(), msg("main", "local", "/plan revise smaller please"))
	close(gate.release)
	if err := <-a; err != nil {
		t.Fatal(err)
	}
	if err := <-r; err != nil {
		t.Fatal(err)
	}
	reqs := h.model.requests()
	last := reqs[len(reqs)-1]
	var b strings.Builder
	for _, m := range last.Messages {
		if m.Role == core.RoleUser {
			b.WriteString(m.Content[:min(len(m.Content), 40)] + " | ")
		}
	}
	t.Logf("session %s: user-role messages in the revision turn: %s", sid, b.String())
	approvedIdx, rejectedIdx := -1, -1
	for i, m := range last.Messages {
		if strings.HasPrefix(m.Content, "[PLAN_DECISION]: approved") {
			approvedIdx = i
		}
		if strings.HasPrefix(m.Content, "[PLAN_DECISION]: rejected") {
			rejectedIdx = i
		}
	}
	if approvedIdx >= 0 && rejectedIdx >= 0 {
		t.Fatalf("the revision turn received the stale approval (msg %d) and the rejection (msg %d)", approvedIdx, rejectedIdx)
	}
}

// R4: /plan show (read-only fast path) runs concurrently with a later /plan accept and
// rewrites the plan file from its stale snapshot: the file says pending/awaiting_approval
// while the store says accepted/executing.
func TestRegressionShowRewritesStalePlanFile(t *testing.T) {
	h := newHarness(t)
	p := h.toPending("main", "Docs")
	ps := &pausingPlanStore{Store: h.st, loaded: make(chan struct{}), release: make(chan struct{})}
	ps.armed.Store(true)
	eng := h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: ps, Model: h.model, Out: h.out, Now: func() time.Time { return h.clock }}))
	show := eng.Enqueue(context.Background(), msg("main", "bob", "/plan show"))
	<-ps.loaded // show has read the plan (pending)
	if err := eng.Handle(context.Background(), msg("main", "local", "/plan accept")); err != nil {
		t.Fatal(err)
	}
	close(ps.release)
	if err := <-show; err != nil {
		t.Fatal(err)
	}
	// Plan file refreshes are written in the background; Wait covers them.
	if err := eng.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	stored := h.plan(p.ID)
	data, err := os.ReadFile(stored.File)
	if err != nil {
		t.Fatal(err)
	}
	head := strings.SplitN(string(data), "\n", 4)[2]
	t.Logf("store: %s / %s; file: %s", stored.Status, h.session("main").Phase, head)
	if stored.Status == core.PlanAccepted && strings.Contains(head, "status: pending") {
		t.Fatalf("/plan show, sent before /plan accept, ran alongside it and left a stale plan file: %q", head)
	}
}

// R5: two distinct sessions share one plan directory and one workspace directory.
func TestRegressionDistinctSessionsShareDirs(t *testing.T) {
	a := core.Address{Channel: "telegram", Account: "111", Chat: "-1001"}
	b := core.Address{Channel: "telegram", Account: "222", Chat: "-1001"}
	c := core.Address{Channel: "terminal", Account: "local", Chat: "a b"}
	d := core.Address{Channel: "terminal", Account: "local", Chat: "a_b"}
	if a.SessionID() != b.SessionID() && a.Dir() == b.Dir() {
		t.Errorf("sessions %s and %s share dir %s", a.SessionID(), b.SessionID(), a.Dir())
	}
	if c.SessionID() != d.SessionID() && c.Dir() == d.Dir() {
		t.Errorf("sessions %s and %s share dir %s", c.SessionID(), d.SessionID(), c.Dir())
	}
}

// gatedStore blocks the first Commit after arming until release is closed.
type gatedStore struct {
	core.Store
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gatedStore) Commit(ctx context.Context, ch core.Change) (core.Session, error) {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return g.Store.Commit(ctx, ch)
}

// pausingPlanStore: the first plan read after arming (Plan, or SessionPlan, which reads
// the session with its plan) returns its (then current) value only after release is
// closed.
type pausingPlanStore struct {
	core.Store
	armed   atomic.Bool
	loaded  chan struct{}
	release chan struct{}
}

func (s *pausingPlanStore) Plan(ctx context.Context, id string) (core.Plan, error) {
	if s.armed.CompareAndSwap(true, false) {
		p, err := s.Store.Plan(ctx, id)
		close(s.loaded)
		<-s.release
		return p, err
	}
	return s.Store.Plan(ctx, id)
}

func (s *pausingPlanStore) SessionPlan(ctx context.Context, id string, inbound *core.InboundKey) (core.Session, *core.Plan, error) {
	if s.armed.CompareAndSwap(true, false) {
		se, p, err := s.Store.SessionPlan(ctx, id, inbound)
		close(s.loaded)
		<-s.release
		return se, p, err
	}
	return s.Store.SessionPlan(ctx, id, inbound)
}

// freezeAfterStore commits normally, but after the first commit that carries an audit row
// of kind k it never returns: the process "dies" right after the commit.
type freezeAfterStore struct {
	core.Store
	k      core.EventKind
	frozen chan struct{}
	once   sync.Once
}

func (f *freezeAfterStore) Commit(ctx context.Context, ch core.Change) (core.Session, error) {
	s, err := f.Store.Commit(ctx, ch)
	for _, e := range ch.Events {
		if e.Kind == f.k && err == nil {
			f.once.Do(func() { close(f.frozen) })
			select {} // dead
		}
	}
	return s, err
}

// R6: the process dies right after /plan accept is committed (before the reply and the
// agent turn). After a restart nothing resumes the accepted plan: the session sits in
// executing with the approval queued, the person was never told, and /plan accept is now
// refused.
func TestRegressionCrashAfterAcceptCommitNothingResumes(t *testing.T) {
	h := newHarness(t)
	h.toPending("main", "Docs")
	fz := &freezeAfterStore{Store: h.st, k: core.EventAccepted, frozen: make(chan struct{})}
	eng := engine.NewEngine(h.cfg, engine.Deps{Store: fz, Model: h.model, Out: h.out, Now: func() time.Time { return h.clock }})
	n := h.out.count()
	_ = eng.Enqueue(context.Background(), msg("main", "local", "/plan accept"))
	<-fz.frozen
	told := joinTexts(h.out.since(n))
	// restart: a fresh engine over the same database
	h.open()
	calls0 := len(h.model.requests())
	// plangate chat and serve call Resume at start-up.
	if _, err := h.eng.Resume(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := h.eng.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := h.session("main")
	again := h.say("main", "local", "/plan accept")
	t.Logf("told before crash: %q; after restart phase %s, injections queued %d, model calls %d; /plan accept -> %q",
		told, s.Phase, len(s.Injections), len(h.model.requests())-calls0, lastText(again))
	if s.Phase == core.PhaseExecuting && len(s.Injections) == 1 {
		t.Fatalf("accepted plan is stranded after a crash between commit and turn: nobody was told, nothing resumes, and /plan accept now says %q", lastText(again))
	}
}

// blockAtCall makes m block forever on call number at (1-based): the process dies there.
// The returned channel is closed when that call is reached.
func blockAtCall(m *fakeModel, at int32) <-chan struct{} {
	var n atomic.Int32
	reached := make(chan struct{})
	m.Hook(func(core.ModelRequest) {
		if n.Add(1) == at {
			close(reached)
			select {}
		}
	})
	return reached
}

// R7: the process dies in the middle of an execution turn (after tool calls ran). Nothing of
// the turn was committed: after a restart the approval is delivered to the model a second
// time and the transcript has no trace of the tool calls that already ran (their side
// effects are real), so the agent starts the plan over.
func TestRegressionCrashMidTurnRedeliversApprovalAndLosesToolHistory(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	h.toPending("main", "Docs")
	reached := blockAtCall(h.model, 2)
	h.model.push(sid, calls(call("plan_status", map[string]any{}))) // stands for write_file/run_command
	eng := engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: h.model, Out: h.out, Now: func() time.Time { return h.clock }})
	_ = eng.Enqueue(context.Background(), msg("main", "local", "/plan accept"))
	<-reached // first model call answered, its tool ran; the second call never returns
	h.open()  // restart
	s := h.session("main")
	tr, err := h.st.Transcript(context.Background(), sid, 100)
	if err != nil {
		t.Fatal(err)
	}
	ranTool := false
	for _, m := range tr {
		if m.Role == core.RoleTool && m.Name == "plan_status" {
			ranTool = true
		}
	}
	h.say("main", "local", "continue please")
	reqs := h.model.requests()
	last := reqs[len(reqs)-1]
	approvals := 0
	for _, m := range last.Messages {
		if strings.HasPrefix(m.Content, "[PLAN_DECISION]: approved") {
			approvals++
		}
	}
	t.Logf("after restart: injections queued %d, tool call in transcript %v, approvals in next request %d", len(s.Injections), ranTool, approvals)
	if len(s.Injections) == 1 && !ranTool {
		t.Fatalf("crash mid-turn: the approval is re-delivered and the executed tool calls vanished from the transcript")
	}
}

// R8: question buttons carry no id: a late click on an option of an earlier, answered
// question is taken as the answer to the current question when the option texts match.
func TestRegressionStaleQuestionButtonAnswersNewQuestion(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(call("ask_user_question", map[string]any{"question": "Delete the old changelog?", "options": []string{"Yes", "No"}})))
	rs := h.say("main", "local", "tidy the docs")
	q1 := rs[len(rs)-1]
	h.model.push(sid, calls(call("ask_user_question", map[string]any{"question": "Also wipe docs/archive?", "options": []string{"Yes", "No"}})))
	h.click("main", "local", q1.Buttons[1].Action) // "No" to Q1 -> the agent asks Q2
	if h.session("main").Question == nil {
		t.Fatal("setup: Q2 not pending")
	}
	// A second (late, duplicated) click on Q1's "Yes" button arrives.
	out := h.click("main", "local", q1.Buttons[0].Action)
	t.Logf("late click on Q1 -> %q", joinTexts(out))
	if h.session("main").Question == nil && strings.Contains(joinTexts(out), "Answer recorded: Yes") {
		t.Fatal("a click on a button of the earlier question answered the current one (\"Also wipe docs/archive?\" -> Yes)")
	}
	if q := h.session("main").Question; q == nil || q.Text != "Also wipe docs/archive?" {
		t.Fatalf("the late click changed the pending question: %+v", q)
	}
	if got := replyKinds(out); len(got) != 1 || got[0] != core.ReplyNotice {
		t.Fatalf("the late click was answered with %v, want one notice", got)
	}
}
