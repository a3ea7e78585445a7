package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
)

// One process runs a session's turn; mutating calls run at most once.

// recTools is a Toolbox with one mutating tool, write_file, that records its calls and
// changes nothing. With block set, the first call blocks until block is closed, ignoring
// its context: a process killed in the middle of the call.
type recTools struct {
	mu      sync.Mutex
	calls   []string
	block   chan struct{}
	entered chan struct{}
}

func (r *recTools) Tools() []core.ToolSpec {
	return []core.ToolSpec{{Name: "write_file", Kind: core.ToolMutating, Parameters: json.RawMessage(`{"type":"object"}`)}}
}

func (r *recTools) Call(_ context.Context, _ core.Workspace, name string, args json.RawMessage) (string, error) {
	r.mu.Lock()
	r.calls = append(r.calls, name+" "+string(args))
	first := len(r.calls) == 1
	r.mu.Unlock()
	if first && r.block != nil {
		close(r.entered)
		<-r.block
	}
	return "written", nil
}

func (r *recTools) WritePaths(_ string, args json.RawMessage) ([]string, error) {
	var a struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, err
	}
	return []string{a.Path}, nil
}

func (r *recTools) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func writeNotes(content string) core.ToolCall {
	return call("write_file", map[string]any{"path": "NOTES.md", "content": content})
}

// toScopedPending drives chat of process p to a pending plan that may change NOTES.md.
func toScopedPending(t *testing.T, h *harness, p *process, chat string) {
	t.Helper()
	ctx := context.Background()
	say := func(text string) {
		if err := p.eng.Handle(ctx, core.Message{Address: addr(chat), Sender: core.Person{ID: "local"}, Text: text, Time: h.clock}); err != nil {
			t.Fatal(err)
		}
	}
	say("/plan on")
	p.model.push(sessionID(chat), calls(call("exit_plan_mode", map[string]any{
		"title": "Notes", "plan": []stepArg{{Step: "Write the notes"}, {Step: "Check them"}},
		"scope": map[string]any{"allowed_paths": []string{"NOTES.md"}},
	})))
	say("plan the notes")
	if s := h.session(chat); s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("setup: phase %s", s.Phase)
	}
}

func evMsg(h *harness, chat, id, text string) core.Message {
	return core.Message{ID: id, Address: addr(chat), Sender: core.Person{ID: "local", Name: "local"}, Text: text, Time: h.clock}
}

// A turn runs only in the process holding the session's lease: another process's Resume
// leaves it alone, and a message that process receives is answered by the holder.
func TestLeaseHolderRunsTheTurn(t *testing.T) {
	h := newHarness(t)
	a := h.process(nil, nil, nil)
	entered, release := a.holdFirstCall()
	done := a.eng.Enqueue(context.Background(), evMsg(h, "a", "ev-a", "hello"))
	<-entered

	b := h.process(nil, nil, nil)
	bctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if n, err := b.eng.Resume(bctx, nil); err != nil || n != 0 {
		t.Fatalf("B's Resume = %d, %v; want 0 (A holds the lease)", n, err)
	}
	if err := b.eng.Handle(bctx, evMsg(h, "a", "ev-b", "also this")); err != nil {
		t.Fatal(err)
	}
	if got := len(b.model.requests()); got != 0 || b.out.count() != 0 {
		t.Fatalf("B ran a turn it does not hold the lease for: %d model calls, replies %+v", got, b.out.all())
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	reqs := a.model.requests()
	if len(reqs) != 2 {
		t.Fatalf("A made %d model calls, want 2 (its turn, then B's message); A said %s; log %s", len(reqs), joinTexts(a.out.all()), a.log)
	}
	got := false
	for _, m := range reqs[1].Messages {
		got = got || (m.Role == core.RoleUser && m.Content == "also this")
	}
	if !got {
		t.Fatalf("A's second turn did not get B's message: %+v", reqs[1].Messages)
	}
	if a.out.count() != 2 || b.out.count() != 0 {
		t.Fatalf("replies: A %d, B %d", a.out.count(), b.out.count())
	}
	if _, err := h.st.Lease(context.Background(), engine.SessionLease(sessionID("a")), h.clock); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("lease after the turn: %v", err)
	}
}

// Resume takes over a lease only once it has expired.
func TestResumeTakesOverOnlyExpiredLeases(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, chat := range []string{"dead", "busy"} {
		s := core.Session{ID: sessionID(chat), Address: addr(chat), Phase: core.PhaseOff, Owner: "local"}
		if _, err := h.st.Commit(ctx, core.Change{Session: &s,
			Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "still there?", Name: "local", At: h.clock}}}); err != nil {
			t.Fatal(err)
		}
	}
	// Another host's process: one let its lease lapse, one keeps it.
	if _, ok, err := h.st.AcquireLease(ctx, engine.SessionLease(sessionID("dead")), "otherhost/1/x", h.clock.Add(-time.Minute), 30*time.Second); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok, err := h.st.AcquireLease(ctx, engine.SessionLease(sessionID("busy")), "otherhost/2/y", h.clock, 30*time.Second); err != nil || !ok {
		t.Fatal(ok, err)
	}
	h.model.push(sessionID("dead"), text("Yes, back."))
	n, err := h.eng.Resume(ctx, nil)
	if err != nil || n != 1 {
		t.Fatalf("Resume = %d, %v; want 1", n, err)
	}
	for _, r := range h.model.requests() {
		if r.SessionID == sessionID("busy") {
			t.Fatal("Resume ran a turn whose lease another process holds")
		}
	}
	mustContain(t, joinTexts(h.out.all()), "Yes, back.")
	if _, err := h.st.Lease(ctx, engine.SessionLease(sessionID("dead")), h.clock); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("taken-over lease not released after the turn: %v", err)
	}
	if l, err := h.st.Lease(ctx, engine.SessionLease(sessionID("busy")), h.clock); err != nil || l.Owner != "otherhost/2/y" {
		t.Fatalf("busy lease: %+v, %v", l, err)
	}
}

// A mutating call that started and never finished (the process died in it) is not run
// again after the restart: the agent and the chat are told its effects are unknown, and
// the plan's execution is resumed.
func TestInterruptedToolRunIsNotRepeated(t *testing.T) {
	h := newHarness(t)
	toolsA := &recTools{block: make(chan struct{}), entered: make(chan struct{})}
	a := h.process(nil, nil, toolsA)
	toScopedPending(t, h, a, "a")
	a.model.push(sessionID("a"), calls(writeNotes("# Notes\n")))
	actx, kill := context.WithCancel(context.Background())
	done := a.eng.Enqueue(actx, evMsg(h, "a", "ev-accept", "/plan accept"))
	<-toolsA.entered
	kill() // the process dies while write_file runs
	defer func() { close(toolsA.block); <-done }()

	runs, err := h.st.UnfinishedToolRuns(context.Background(), sessionID("a"))
	if err != nil || len(runs) != 1 || runs[0].Tool != "write_file" {
		t.Fatalf("started run not recorded before the call: %+v, %v", runs, err)
	}

	h.clock = h.clock.Add(time.Minute) // A's lease expires
	toolsB := &recTools{}
	b := h.process(nil, nil, toolsB)
	b.model.push(sessionID("a"), text("NOTES.md is there; continuing."))
	if n, err := b.eng.Resume(context.Background(), nil); err != nil || n != 1 {
		t.Fatalf("Resume = %d, %v", n, err)
	}
	if toolsA.count() != 1 || toolsB.count() != 0 {
		t.Fatalf("write_file ran %d+%d times, want once", toolsA.count(), toolsB.count())
	}
	chat := joinTexts(b.out.all())
	mustContain(t, chat, "plangate restarted while working on plan v1; continuing with step 1.",
		"The run of write_file on NOTES.md was interrupted by a restart; its effects are unknown.")
	reqs := b.model.requests()
	if len(reqs) == 0 || !strings.Contains(history(reqs[0])[len(history(reqs[0]))-1].Content, "The run of write_file on NOTES.md was interrupted") {
		t.Fatalf("the agent was not told: %+v", reqs)
	}
	if runs, _ := h.st.UnfinishedToolRuns(context.Background(), sessionID("a")); len(runs) != 0 {
		t.Fatalf("still unfinished: %+v", runs)
	}
	all, _ := h.st.ToolRunsOf(context.Background(), sessionID("a"))
	if len(all) != 1 || all[0].Outcome != engine.ToolRunInterrupted {
		t.Fatalf("tool runs: %+v", all)
	}
}

// A plan turned off by another process between two writes: the second is not run, and
// the chat hears what the first did, not "nothing was changed".
func TestConflictAfterWriteIsReportedTruthfully(t *testing.T) {
	h := newHarness(t)
	tools := &recTools{}
	a := h.process(nil, nil, tools)
	b := h.process(nil, nil, nil)
	toScopedPending(t, h, a, "a")
	a.model.push(sessionID("a"), calls(writeNotes("one")), calls(writeNotes("two")))
	n := 0
	a.model.Hook(func(core.ModelRequest) {
		if n++; n == 2 { // after the first write: a person turns the plan off in B
			if err := b.eng.Handle(context.Background(), evMsg(h, "a", "ev-off", "/plan off")); err != nil {
				t.Error(err)
			}
		}
	})
	before := a.out.count()
	if err := a.eng.Handle(context.Background(), evMsg(h, "a", "ev-acc", "/plan accept")); err != nil {
		t.Fatal(err)
	}
	if tools.count() != 1 {
		t.Fatalf("write_file ran %d times; the second must be refused", tools.count())
	}
	chat := joinTexts(a.out.since(before))
	mustContain(t, chat, "Wrote NOTES.md, then the plan was turned off elsewhere")
	if strings.Contains(chat, "nothing was changed") {
		t.Fatalf("claims nothing was changed after a write:\n%s", chat)
	}
	if s := h.session("a"); s.Phase != core.PhaseOff {
		t.Fatalf("phase %s", s.Phase)
	}
}

// A turn whose lease was taken over (this process stalled past the ttl) is stopped: its
// renewal is refused and its context cancelled, and the new holder's lease stays.
func TestLostLeaseStopsTheTurn(t *testing.T) {
	h := newHarness(t, func(c *engine.Config) { c.LeaseTTL = 30 * time.Millisecond })
	// The model blocks every call until its context ends.
	m, entered := newFakeModel(), make(chan struct{})
	m.Block(make(chan struct{}))
	m.Hook(func(core.ModelRequest) { close(entered) })
	eng := engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: m, Out: h.out, Owner: "stalled",
		Now: func() time.Time { return h.clock }})
	renewals := &fakeTimers{}
	engine.SetRenewTimer(eng, renewals.after)
	done := eng.Enqueue(context.Background(), evMsg(h, "a", "ev-1", "work"))
	<-entered
	ctx := context.Background()
	name := engine.SessionLease(sessionID("a"))
	// Another process, an hour later by its clock, finds the lease expired and takes it.
	if _, ok, err := h.st.AcquireLease(ctx, name, "thief", h.clock.Add(time.Hour), time.Hour); err != nil || !ok {
		t.Fatal(ok, err)
	}
	renewals.fireAll(t) // the renewal is due
	<-done              // the refused renewal cancelled the turn
	if l, err := h.st.Lease(ctx, name, h.clock); err != nil || l.Owner != "thief" {
		t.Fatalf("lease after the stopped turn: %+v, %v", l, err)
	}
	if n := renewals.pending(); n != 0 {
		t.Fatalf("%d renewals scheduled after the lease was lost", n)
	}
}

// releaseHook runs before once, just before the first lease release: the moment after the
// holder's last look for work another process left it.
type releaseHook struct {
	*store.Store
	once   sync.Once
	before func()
}

func (r *releaseHook) ReleaseLease(ctx context.Context, name, owner string) error {
	r.once.Do(r.before)
	return r.Store.ReleaseLease(ctx, name, owner)
}

// A message another process stores between the holder's last look and its release is
// left to the holder (the lease is still held), so the holder must look again once it has
// released the lease, or nobody answers it.
func TestMessageLeftJustBeforeReleaseIsAnswered(t *testing.T) {
	h := newHarness(t)
	leftJustBeforeRelease(t, h, false)
	if _, err := h.st.Lease(context.Background(), engine.SessionLease(sessionID("a")), h.clock); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("lease after the turns: %v", err)
	}
}

// leftJustBeforeRelease has process A answer "hello" while process B stores "also this"
// just before A releases the lease (replays: both as messages an adapter replays), and
// checks that A answered B's message in a second turn and B ran none.
func leftJustBeforeRelease(t *testing.T, h *harness, replays bool) {
	t.Helper()
	msg := func(id, text string) core.Message {
		m := evMsg(h, "a", id, text)
		m.Replays = replays
		return m
	}
	b := h.process(nil, nil, nil)
	st, err := store.Open(context.Background(), filepath.Join(h.dir, "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	hooked := &releaseHook{Store: st, before: func() {
		if err := b.eng.Handle(context.Background(), msg("ev-b", "also this")); err != nil {
			t.Error(err)
		}
	}}
	model, out := newFakeModel(), &recorder{}
	a := h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: hooked, Model: model, Out: out, Log: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return h.clock }, Owner: "test-process-release-a"}))
	if err := <-a.Enqueue(context.Background(), msg("ev-a", "hello")); err != nil {
		t.Fatal(err)
	}
	if err := a.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(b.model.requests()); got != 0 {
		t.Fatalf("B made %d model calls; the lease was A's when it stored its message", got)
	}
	reqs := model.requests()
	if len(reqs) != 2 {
		t.Fatalf("A made %d model calls, want 2 (its turn, then the message B left it just before the release)", len(reqs))
	}
	if last := history(reqs[1])[len(history(reqs[1]))-1]; last.Role != core.RoleUser || last.Content != "also this" {
		t.Fatalf("A's second turn ended with %+v, want B's message", last)
	}
}

// A decision another process commits while this one holds the session's lease queues the
// agent's turn, which that process cannot start (the lease is held): this one runs it
// once it has released the lease and looked again (moreWork), and that process runs none.
func TestDecisionLeftJustBeforeReleaseStartsItsTurn(t *testing.T) {
	h := newHarness(t)
	b := h.process(nil, nil, nil)
	st, err := store.Open(context.Background(), filepath.Join(h.dir, "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	hooked := &releaseHook{Store: st, before: func() {
		if err := b.eng.Handle(context.Background(), evMsg(h, "a", "ev-accept", "/plan accept")); err != nil {
			t.Error(err)
		}
		if s := h.session("a"); s.Phase != core.PhaseExecuting || len(s.Injections) == 0 {
			t.Errorf("after B's accept: phase %s, %d injections; want executing with the turn queued", s.Phase, len(s.Injections))
		}
	}}
	model, out := newFakeModel(), &recorder{}
	a := h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: hooked, Model: model, Out: out, Log: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return h.clock }, Owner: "test-process-decision-a"}))
	if err := <-a.Enqueue(context.Background(), evMsg(h, "a", "ev-on", "/plan on")); err != nil {
		t.Fatal(err)
	}
	model.push(sessionID("a"), calls(propose("Notes", "Write the notes", "Check them")))
	if err := <-a.Enqueue(context.Background(), evMsg(h, "a", "ev-plan", "plan the notes")); err != nil {
		t.Fatal(err)
	}
	if err := a.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(b.model.requests()); n != 0 {
		t.Fatalf("B made %d model calls; the lease was A's when it committed the accept", n)
	}
	if n := len(model.requests()); n != 2 {
		t.Fatalf("A made %d model calls, want 2 (the proposal, then the accepted plan's turn)", n)
	}
	if s := h.session("a"); len(s.Injections) != 0 {
		t.Fatalf("injections left: %+v", s.Injections)
	}
}
