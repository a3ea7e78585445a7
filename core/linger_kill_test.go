package core_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// Lingering must not change what a kill leaves for the next start.

// A turn stopped short of its end (agent.max_iterations: its newest entry is a tool round,
// and the chat was told to send a message to go on) releases its lease at once: a lease
// left by a process killed while it lingered would make the next start's Resume take the
// turn for cut off and run the agent again, unasked, with a restart notice.
func TestKillWhileLingeringAfterAStoppedTurnResumesNothing(t *testing.T) {
	h := newHarness(t, func(c *core.Config) { c.MaxIterations = 2 })
	a := newLingerer(t, h, "test-lingerer-a")
	for range 3 {
		a.model.push(sessionID("a"), calls(call("plan_status", map[string]any{})))
	}
	a.say(t, h, "ev-1", "loop")
	if rs := a.out.all(); len(rs) != 1 || !strings.Contains(rs[0].Text, "agent.max_iterations") {
		t.Fatalf("setup: replies %+v", rs)
	}
	if l, ok := leaseOf(t, h, "a"); ok {
		t.Fatalf("a stopped turn kept its lease: %+v", l)
	}
	// A is killed here (its engine is simply not used again); the next process starts
	// once any lease A could have left has expired.
	h.clock = h.clock.Add(core.DefaultLeaseTTL + 1)
	b := h.process(nil, nil, nil)
	h.waitOnCleanup(b.eng)
	n, err := b.eng.Resume(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 || len(b.model.requests()) != 0 || b.out.count() != 0 {
		t.Fatalf("the next start resumed %d sessions: %d model calls, replies %+v; want none", n, len(b.model.requests()), b.out.all())
	}
}

// A turn that visibly ended (the agent's final answer) still lingers, and a kill while it
// does leaves nothing to resume either.
func TestKillWhileLingeringAfterAnAnswerResumesNothing(t *testing.T) {
	h := newHarness(t)
	a := newLingerer(t, h, "test-lingerer-a")
	a.say(t, h, "ev-1", "hello")
	if _, ok := leaseOf(t, h, "a"); !ok {
		t.Fatal("the answered turn did not keep its lease")
	}
	h.clock = h.clock.Add(core.DefaultLeaseTTL + 1)
	b := h.process(nil, nil, nil)
	h.waitOnCleanup(b.eng)
	if n, err := b.eng.Resume(context.Background(), nil); err != nil || n != 1 {
		t.Fatalf("Resume: %d sessions, %v; want 1 (the lease left behind is looked at)", n, err)
	}
	if len(b.model.requests()) != 0 || b.out.count() != 0 {
		t.Fatalf("the next start answered again: %d model calls, replies %+v", len(b.model.requests()), b.out.all())
	}
}

// A turn whose reply could not be sent releases its lease at once: killed while it
// lingered, it would leave a live lease, and the next start's backlog leaves a session's
// rows to the holder of its live lease (which is dead), so the reply would never go out.
func TestKillWhileLingeringWithAFailedReplyLeavesItToTheBacklog(t *testing.T) {
	h := newHarness(t)
	st, err := store.Open(context.Background(), filepath.Join(h.dir, "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := h.cfg
	cfg.LeaseLinger = core.DefaultLeaseLinger
	down := &flakySender{down: true}
	a := core.NewEngine(cfg, core.Deps{Store: st, Model: newFakeModel(), Out: down, Log: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return h.clock }, Owner: "test-lingerer-a"})
	timers := &lingerTimers{}
	core.SetLingerTimer(a, timers.after)
	if err := a.Handle(context.Background(), evMsg(h, "a", "ev-1", "hello")); err != nil {
		t.Fatal(err)
	}
	if rows := unsent(t, h.st); len(rows) != 1 || rows[0].Attempts != 1 {
		t.Fatalf("setup: outbox %+v, want the answer's row, failed once", rows)
	}
	if l, ok := leaseOf(t, h, "a"); ok {
		t.Fatalf("a turn whose reply is unsent kept its lease: %+v", l)
	}
	// A is killed here; B starts a second later.
	h.clock = h.clock.Add(time.Second)
	b := h.process(nil, nil, nil)
	h.waitOnCleanup(b.eng)
	backlog, err := b.eng.Unsent(context.Background(), nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := backlog.Deliver(context.Background()); n != 1 {
		t.Fatalf("the next start's backlog delivered %d replies, want A's answer", n)
	}
	if rs := b.out.all(); len(rs) != 1 || rs[0].Text != "ok" {
		t.Fatalf("B sent %+v, want A's answer", rs)
	}
}
