package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

func testSessionRoundTrip(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	se := fullSession("s1")
	got := commit(t, s, core.Change{Session: &se, Plans: []core.Plan{fullPlan("s1-p1", "s1", 1)}})
	want := se
	want.Version = 1
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Commit returned\n%+v\nwant\n%+v", got, want)
	}
	read, err := s.Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(read, want) {
		t.Fatalf("Session read\n%+v\nwant\n%+v", read, want)
	}
	// A second instance on the same database reads the same row.
	read2, err := open().Session(ctx, "s1")
	if err != nil || !reflect.DeepEqual(read2, want) {
		t.Fatalf("second instance read %+v, %v; want %+v", read2, err, want)
	}
	if _, err := s.Session(ctx, "nope"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("unknown session: err = %v, want ErrNotFound", err)
	}
	// Clearing the optional parts reads back as cleared.
	got.Question, got.Injections, got.PlanID, got.ApprovalID = nil, nil, "", ""
	got.AutoApprove, got.UpdatedAt = false, at(9)
	got = commit(t, s, core.Change{Session: &got})
	read, err = s.Session(ctx, "s1")
	if err != nil || !reflect.DeepEqual(read, got) || read.Version != 2 || !read.CreatedAt.Equal(at(0)) {
		t.Fatalf("after clearing: read %+v, %v; want %+v (version 2, created at(0))", read, err, got)
	}
}

func testSessionCAS(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	v1 := seed(t, s, "s1")
	v1.Phase = core.PhaseExecuting
	v2 := commit(t, s, core.Change{Session: &v1})
	if v2.Version != 2 {
		t.Fatalf("version after update = %d, want 2", v2.Version)
	}
	// A stale writer loses and writes nothing of its change.
	stale := v1
	stale.Owner = "intruder"
	_, err := s.Commit(ctx, core.Change{Session: &stale,
		Events:   []core.Event{{Kind: core.EventAccepted, Actor: core.PersonActor("x")}},
		Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "lost"}}})
	if !errors.Is(err, core.ErrConflict) {
		t.Fatalf("stale update: err = %v, want ErrConflict", err)
	}
	// Inserting a session that exists is a conflict too.
	fresh := plainSession("s1")
	if _, err := s.Commit(ctx, core.Change{Session: &fresh}); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("second insert: err = %v, want ErrConflict", err)
	}
	read, err := s.Session(ctx, "s1")
	if err != nil || read.Version != 2 || read.Owner != "" || read.Phase != core.PhaseExecuting {
		t.Fatalf("after the losers: %+v, %v", read, err)
	}
	evs, _ := s.Events(ctx, "s1")
	msgs, _ := s.Transcript(ctx, "s1", 0)
	if len(evs) != 0 || len(msgs) != 0 {
		t.Fatalf("a losing change left %d events and %d messages", len(evs), len(msgs))
	}
}

func testSessionsOrder(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	if list, err := s.Sessions(ctx); err != nil || list == nil || len(list) != 0 {
		t.Fatalf("empty store: Sessions = %v, %v; want an empty, non-nil list", list, err)
	}
	for i, id := range []string{"b", "a", "c"} {
		se := plainSession(id)
		se.UpdatedAt = at(i)
		commit(t, s, core.Change{Session: &se})
	}
	tie := plainSession("0")
	tie.UpdatedAt = at(2) // the same time as "c": ties are broken by id
	commit(t, s, core.Change{Session: &tie})
	list, err := s.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, se := range list {
		ids = append(ids, se.ID)
	}
	if want := []string{"0", "c", "a", "b"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("Sessions order = %v, want %v (newest first, then id)", ids, want)
	}
}

func testPlans(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	seed(t, s, "s1")
	seed(t, s, "s2")
	p1, p2 := fullPlan("p1", "s1", 1), fullPlan("p2", "s1", 2)
	p2.Decision, p2.Status, p2.CreatedAt = nil, core.PlanPending, at(5)
	q1 := fullPlan("q1", "s2", 1)
	q1.CreatedAt = at(3)
	commit(t, s, core.Change{SessionID: "s1", Plans: []core.Plan{p2, p1}})
	commit(t, s, core.Change{Plans: []core.Plan{q1}})
	for _, get := range []func() (core.Plan, error){
		func() (core.Plan, error) { return s.Plan(ctx, "p1") },
		func() (core.Plan, error) { return s.PlanByApproval(ctx, "p1-a") },
	} {
		if p, err := get(); err != nil || !reflect.DeepEqual(p, p1) {
			t.Fatalf("plan read %+v, %v\nwant %+v", p, err, p1)
		}
	}
	if _, err := s.Plan(ctx, "nope"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("unknown plan: %v", err)
	}
	if _, err := s.PlanByApproval(ctx, ""); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("empty approval id: %v", err)
	}
	list, err := s.Plans(ctx, "s1")
	if err != nil || len(list) != 2 || list[0].ID != "p1" || list[1].ID != "p2" {
		t.Fatalf("Plans(s1) = %+v, %v; want p1, p2 by version", list, err)
	}
	all, err := s.Plans(ctx, "")
	if err != nil || len(all) != 3 || all[0].ID != "p1" || all[1].ID != "q1" || all[2].ID != "p2" {
		t.Fatalf("Plans(\"\") = %+v, %v; want p1, q1, p2 by creation", all, err)
	}
	// An update by id replaces the mutable fields and keeps created_at.
	p2.Status, p2.ApprovalID, p2.UpdatedAt, p2.CreatedAt = core.PlanSuperseded, "", at(7), at(8)
	commit(t, s, core.Change{SessionID: "s1", Plans: []core.Plan{p2}})
	got, err := s.Plan(ctx, "p2")
	if err != nil || got.Status != core.PlanSuperseded || got.ApprovalID != "" || !got.CreatedAt.Equal(at(5)) || !got.UpdatedAt.Equal(at(7)) {
		t.Fatalf("updated plan = %+v, %v", got, err)
	}
	// An update that keeps the version and the approval id (a decision, a step's progress:
	// SQLite updates such a row in place) replaces every other mutable field as well.
	kept := p1
	kept.Status, kept.Hash, kept.File, kept.Requesters, kept.EditedBy = core.PlanCompleted, "sha256:def", "slack-C2/plan-v1b.md", []core.Requester{{By: "slack:U8"}}, ""
	kept.Body.Title, kept.Body.Steps = "Add a changelog, linked", kept.Body.Steps[:1]
	kept.Decision = &plan.Decision{By: "U124", ByName: "Carol", At: at(9), Channel: "slack", Outcome: "completed"}
	kept.Approvals = nil
	kept.Run = plan.Run{Stop: &plan.Stop{Kind: plan.StopMaxLinesChanged, Message: "Stopped: 120 lines changed, the plan allows 100.", At: at(9)}}
	kept.Body.Verification = []plan.Check{{Text: "cat CHANGELOG.md"}, {Name: "tests", Argv: []string{"go", "test", "./..."}}}
	kept.Run.Verification = &plan.Verification{Attempts: 2, Failures: 1, Runs: []plan.CheckRun{{Name: "tests", Argv: []string{"go", "test", "./..."}, ExitCode: 1, Tail: "FAIL"}}}
	exit := 3
	kept.Run.Changed = &plan.Changed{Paths: []string{"CHANGELOG.md"}, Files: 1, Lines: 2,
		Calls:   []plan.CallChange{{Step: "1", Call: "write_file on CHANGELOG.md", Files: []plan.FileLines{{Path: "CHANGELOG.md", Kind: plan.FileAdded, Added: 2, Counted: true}}}},
		Outside: []string{"notes.txt"}}
	kept.Run.Report = &plan.Report{Outcome: string(plan.StopMaxLinesChanged), At: at(9), Measured: true,
		Steps: []plan.ReportStep{{Step: "1", Text: "Add it", Status: plan.StepInProgress,
			Files:    []plan.FileLines{{Path: "CHANGELOG.md", Kind: plan.FileAdded, Added: 2, Counted: true}},
			Commands: []plan.ReportCommand{{Step: "1", Command: "make docs", ExitCode: &exit}}}},
		Files:   []plan.FileLines{{Path: "CHANGELOG.md", Kind: plan.FileAdded, Added: 2, Counted: true}},
		NotDone: []plan.NotDone{{Step: "1", Text: "Add it", Status: plan.StepInProgress, Reason: "stopped"}}, Outside: []string{"notes.txt"},
		Before: &plan.TreeMark{Hash: "aa", Files: 1, Bytes: 3}, After: &plan.TreeMark{Hash: "bb", Files: 2, Bytes: 9, Head: "abc", Ref: "main"}}
	kept.Run.Comments = []plan.Comment{
		{ID: "c1", Steps: []int{1}, StepTexts: []string{"Add it"}, Text: "use the v2 API", By: "slack:U8", ByName: "Dana", At: at(8), Sent: true, AnsweredIn: 2},
		{ID: "c2", Steps: []int{1, 2}, StepTexts: []string{"Add it", "Link it"}, Text: "one client", By: "slack:U9", At: at(8)},
	}
	kept.UpdatedAt = at(9)
	sent := kept
	sent.CreatedAt = at(10) // created_at is set once
	commit(t, s, core.Change{SessionID: "s1", Plans: []core.Plan{sent}})
	if got, err := s.Plan(ctx, "p1"); err != nil || !reflect.DeepEqual(got, kept) {
		t.Fatalf("plan updated in place = %+v, %v\nwant %+v", got, err, kept)
	}
	// One that changes its version moves it in the version index.
	renumbered := kept
	renumbered.Version = 4
	commit(t, s, core.Change{SessionID: "s1", Plans: []core.Plan{renumbered}})
	if list, err := s.Plans(ctx, "s1"); err != nil || len(list) != 2 || list[0].ID != "p2" || list[1].ID != "p1" || list[1].Version != 4 {
		t.Fatalf("Plans(s1) after renumbering p1 = %+v, %v; want p2 (v2), p1 (v4)", list, err)
	}
	// A plan cannot move to another session, and an approval id binds one plan.
	moved := q1
	moved.SessionID = "s1"
	if _, err := s.Commit(ctx, core.Change{SessionID: "s1", Plans: []core.Plan{moved}}); err == nil {
		t.Fatal("moving a plan to another session was accepted")
	}
	dup := fullPlan("p3", "s1", 3)
	dup.ApprovalID = "p1-a"
	if _, err := s.Commit(ctx, core.Change{SessionID: "s1", Plans: []core.Plan{dup}}); err == nil {
		t.Fatal("a second plan with the same approval id was accepted")
	}
}

func testEventsAndTranscript(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	seed(t, s, "s1")
	evs := []core.Event{
		{PlanID: "p1", PlanVersion: 1, Kind: core.EventProposed, Actor: core.AgentActor, Channel: "slack", Detail: "v1", At: at(4)},
		{Kind: core.EventAccepted, Actor: core.PersonActor("U123"), Channel: "slack", Detail: "by Alice", At: at(5)},
	}
	msgs := []core.ChatMessage{
		{Role: core.RoleUser, Content: "add a changelog", Name: "alice", At: at(6)},
		{Role: core.RoleAssistant, Content: "looking", At: at(7), ToolCalls: []core.ToolCall{
			{ID: "call_1", Name: "read_file", Args: json.RawMessage(`{"path":"README.md"}`)}}},
		{Role: core.RoleTool, Content: "# readme", ToolCallID: "call_1", Name: "read_file", At: at(8)},
	}
	commit(t, s, core.Change{SessionID: "s1", Events: evs, Messages: msgs})
	// An audit row needs no stored session.
	commit(t, s, core.Change{Events: []core.Event{{SessionID: "ghost", Kind: core.EventRefused, At: at(9)}}})

	got, err := s.Events(ctx, "s1")
	if err != nil || len(got) != 2 {
		t.Fatalf("Events = %+v, %v", got, err)
	}
	if got[0].ID <= 0 || got[1].ID <= got[0].ID {
		t.Fatalf("event ids %d, %d: want positive and increasing", got[0].ID, got[1].ID)
	}
	for i := range got {
		want := evs[i]
		want.ID, want.SessionID = got[i].ID, "s1"
		if !reflect.DeepEqual(got[i], want) {
			t.Fatalf("event %d = %+v, want %+v", i, got[i], want)
		}
	}
	if ghost, err := s.Events(ctx, "ghost"); err != nil || len(ghost) != 1 {
		t.Fatalf("Events(ghost) = %+v, %v", ghost, err)
	}
	all, err := s.Transcript(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	jsonEq(t, "transcript", all, msgs)
	last2, err := s.Transcript(ctx, "s1", 2)
	if err != nil {
		t.Fatal(err)
	}
	jsonEq(t, "transcript limit 2", last2, msgs[1:])
	if none, err := s.Transcript(ctx, "nope", 5); err != nil || none == nil || len(none) != 0 {
		t.Fatalf("unknown transcript = %v, %v; want empty, non-nil", none, err)
	}
	// Messages for an unknown session are refused: the transcript belongs to a session.
	if _, err := s.Commit(ctx, core.Change{SessionID: "nope", Messages: msgs[:1]}); err == nil {
		t.Fatal("messages for an unknown session were accepted")
	}
}

func testInboundDuplicate(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	seed(t, s, "s1")
	key := core.InboundKey{Channel: "telegram", Account: "bot1", EventID: "update-7"}
	if seen, err := s.SeenInbound(ctx, key); err != nil || seen {
		t.Fatalf("SeenInbound before = %v, %v", seen, err)
	}
	ch := core.Change{SessionID: "s1", Inbound: &key,
		Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "hi", At: at(1)}}}
	commit(t, s, ch)
	if seen, err := s.SeenInbound(ctx, key); err != nil || !seen {
		t.Fatalf("SeenInbound after = %v, %v", seen, err)
	}
	// The replay is refused whole, also by another instance.
	if _, err := open().Commit(ctx, ch); !errors.Is(err, core.ErrDuplicate) {
		t.Fatalf("replay: err = %v, want ErrDuplicate", err)
	}
	if msgs, _ := s.Transcript(ctx, "s1", 0); len(msgs) != 1 {
		t.Fatalf("replay left %d messages, want 1", len(msgs))
	}
	// The key is the triple: the same id on another account is another event.
	other := key
	other.Account = "bot2"
	if seen, _ := s.SeenInbound(ctx, other); seen {
		t.Fatal("another account's event counts as seen")
	}
	commit(t, s, core.Change{SessionID: "s1", Inbound: &other})
	// A duplicate is reported even when the rest of the change would fail.
	bad := core.Change{SessionID: "s1", Inbound: &key, Plans: []core.Plan{{ID: "p", Status: "bogus"}}}
	if _, err := s.Commit(ctx, bad); !errors.Is(err, core.ErrDuplicate) {
		t.Fatalf("duplicate with a bad plan: err = %v, want ErrDuplicate", err)
	}
}

func testAtomicity(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	cur := seed(t, s, "s1")
	cur.Phase = core.PhaseExecuting
	key := core.InboundKey{Channel: "slack", Account: "T1", EventID: "Ev9"}
	commit(t, s, core.Change{SessionID: "s1",
		Nudges: []core.Nudge{{Kind: core.NudgeOnce, Action: core.NudgeRemind, Spec: "5m", NextFireAt: at(5)}}})
	// Everything before the last, invalid nudge is valid; nothing of it may remain.
	_, err := s.Commit(ctx, core.Change{Session: &cur, Inbound: &key,
		Plans:        []core.Plan{fullPlan("p9", "s1", 1)},
		Events:       []core.Event{{Kind: core.EventAccepted}},
		Messages:     []core.ChatMessage{{Role: core.RoleUser, Content: "x"}},
		CancelNudges: true,
		Nudges: []core.Nudge{{Kind: core.NudgeOnce, Action: core.NudgeRemind, Spec: "10m", NextFireAt: at(10)},
			{Kind: "weekly", Action: core.NudgeRemind, Spec: "1w"}},
		Outbox: []core.Outgoing{{Reply: core.Reply{To: cur.Address, Text: "x"}}},
	})
	if err == nil {
		t.Fatal("a change with an invalid nudge kind was committed")
	}
	// A session pointing at a plan that does not exist fails when the transaction commits.
	dangling := cur
	dangling.PlanID = "missing"
	if _, err := s.Commit(ctx, core.Change{Session: &dangling, Events: []core.Event{{Kind: core.EventAccepted}}}); err == nil {
		t.Fatal("a session pointing at a missing plan was committed")
	}
	if _, err := s.Plan(ctx, "p9"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("the failed change's plan: %v, want ErrNotFound", err)
	}
	read, _ := s.Session(ctx, "s1")
	evs, _ := s.Events(ctx, "s1")
	msgs, _ := s.Transcript(ctx, "s1", 0)
	ns, _ := s.Nudges(ctx, "s1")
	out, _ := s.UnsentOutbox(ctx, nil, 0)
	seen, _ := s.SeenInbound(ctx, key)
	if read.Version != 1 || len(evs)+len(msgs)+len(out) != 0 || seen || len(ns) != 1 || ns[0].Status != core.NudgeActive {
		t.Fatalf("failed change left traces: version %d, %d events, %d messages, %d nudges, %d outbox, inbound %v",
			read.Version, len(evs), len(msgs), len(ns), len(out), seen)
	}
}

func testLazyCommitVisible(t *testing.T, open func() Store) {
	ctx := context.Background()
	a, b := open(), open()
	cur := seed(t, a, "s1")
	cur.LastFeedback = "lazy"
	commit(t, a, core.Change{Session: &cur, Lazy: true, Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "hello"}}})
	// Durable commits still work after a lazy one, and both are visible to another instance.
	got, err := b.Session(ctx, "s1")
	if err != nil || got.LastFeedback != "lazy" || got.Version != 2 {
		t.Fatalf("other instance reads %+v, %v", got, err)
	}
	got.LastFeedback = "durable"
	commit(t, b, core.Change{Session: &got})
	if msgs, _ := a.Transcript(ctx, "s1", 0); len(msgs) != 1 {
		t.Fatalf("lazy message count = %d, want 1", len(msgs))
	}
}
