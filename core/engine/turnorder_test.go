package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
)

// Two replicas on one store: a person's message that replica B stores while replica A
// runs the chat's turn is answered by a model call that sees it as new user text, and no
// reply answers a model call that saw none.

// turnModel is a model shared by the replicas of a test. It records every request with
// the replica that made it and answers "re: " and the new user text it saw (the user
// entries after the last final answer), "re: (nothing)" when it saw none. With toolFirst,
// a request whose new text has no tool result after it yet is answered with a call of
// plan_status instead. hook runs first in every call, outside the lock.
type turnModel struct {
	mu        sync.Mutex
	reqs      []turnRequest
	hook      func(by string, fresh []string)
	toolFirst bool
}

type turnRequest struct {
	by     string   // the replica
	fresh  []string // the new user text the request saw
	answer string   // its final answer ("" for a tool call)
}

// as is the model of replica by.
func (m *turnModel) as(by string) core.Model { return replicaModel{m, by} }

type replicaModel struct {
	m  *turnModel
	by string
}

func (r replicaModel) Complete(_ context.Context, req core.ModelRequest) (core.ModelResponse, error) {
	fresh, tooled := freshText(history(req))
	r.m.mu.Lock()
	hook := r.m.hook
	r.m.mu.Unlock()
	if hook != nil {
		hook(r.by, fresh)
	}
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	rec := turnRequest{by: r.by, fresh: fresh}
	var resp core.ModelResponse
	if r.m.toolFirst && len(fresh) > 0 && !tooled {
		resp.ToolCalls = []core.ToolCall{call("plan_status", map[string]any{})}
	} else {
		resp.Text = answerTo(fresh)
		rec.answer = resp.Text
	}
	r.m.reqs = append(r.m.reqs, rec)
	return resp, nil
}

func (m *turnModel) requests() []turnRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]turnRequest(nil), m.reqs...)
}

// freshText is the user text of msgs after their last final answer (an assistant entry
// without tool calls), and whether a tool result follows the first of it.
func freshText(msgs []core.ChatMessage) (fresh []string, tooled bool) {
	for _, m := range msgs {
		switch {
		case m.Role == core.RoleAssistant && len(m.ToolCalls) == 0:
			fresh, tooled = nil, false
		case m.Role == core.RoleUser:
			fresh = append(fresh, m.Content)
		case m.Role == core.RoleTool && len(fresh) > 0:
			tooled = true
		}
	}
	return fresh, tooled
}

func answerTo(fresh []string) string {
	if len(fresh) == 0 {
		return "re: (nothing)"
	}
	return "re: " + strings.Join(fresh, " | ")
}

// replica is one engine of a test on its own handle of the harness's store.
type replica struct {
	eng *engine.Engine
	out *recorder
	log *bytes.Buffer
}

func (h *harness) replica(m *turnModel, name string) *replica {
	h.t.Helper()
	return h.replicaOn(h.openStore(), m, name, nil)
}

// replicaOn is replica on store st, with after as its waits between attempts (nil:
// time.After).
func (h *harness) replicaOn(st core.Store, m *turnModel, name string, after func(time.Duration) <-chan time.Time) *replica {
	h.t.Helper()
	r := &replica{out: &recorder{}, log: &bytes.Buffer{}}
	r.eng = h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: st, Model: m.as(name), Out: r.out,
		Log: slog.New(slog.NewTextHandler(&syncWriter{w: r.log}, nil)), Now: func() time.Time { return h.clock },
		Owner: "test-replica-" + name, After: after}))
	return r
}

// raceQueued is the race of the tests of a queued message that loses a commit race: A's
// turn answers "hello" on chat while B handles "also this", whose first commit queuing it
// for A's turn loses to A's (racingStore); B's waits before it tries again take no time.
// It returns the replicas and the chat's message maker.
func raceQueued(t *testing.T, h *harness, m *turnModel, chat string) (a, b *replica, msg func(id, text string) core.Message) {
	t.Helper()
	a = h.replica(m, "a")
	rs := &racingStore{Store: h.openStore(), holder: h.openStore()}
	b = h.replicaOn(rs, m, "b", func(time.Duration) <-chan time.Time {
		c := make(chan time.Time, 1)
		c <- h.clock
		return c
	})
	msg = func(id, text string) core.Message {
		return core.Message{ID: id, Address: addr(chat), Sender: core.Person{ID: "u1", Name: "ann"}, Text: text, Time: h.clock}
	}
	var fired atomic.Bool
	m.hook = func(by string, _ []string) {
		if by == "a" && fired.CompareAndSwap(false, true) {
			if err := b.eng.Handle(context.Background(), msg("ev-b", "also this")); err != nil {
				t.Errorf("B handling: %v", err)
			}
		}
	}
	if err := <-a.eng.Enqueue(context.Background(), msg("ev-a", "hello")); err != nil {
		t.Fatal(err)
	}
	waitAll(t, a, b)
	if !rs.raced.Load() {
		t.Fatal("B never queued the message: the race was not run")
	}
	return a, b, msg
}

// onDrivers runs fn on a harness on a SQLite file and on one on a throwaway PostgreSQL
// server of the test's own.
func onDrivers(t *testing.T, fn func(t *testing.T, newH func() *harness)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, func() *harness { return newHarness(t) }) })
	t.Run("postgres", func(t *testing.T) {
		srv := pgtest.Own(t)
		var n atomic.Int64
		fn(t, func() *harness {
			dsn, err := srv.NewSchema(context.Background(), fmt.Sprintf("turnorder%d", n.Add(1)))
			if err != nil {
				t.Fatal(err)
			}
			return newHarnessOn(t, store.DriverPostgres, dsn)
		})
	})
}

// TestMessageStoredDuringAnotherReplicasTurn: replica A runs the turn of "hello"; inside
// that model call, replica B stores the chat's next messages. Whatever the order of
// commits, every person message is stored once and answered by a model call that saw it
// as new user text, each answer is stored right after the user text its call saw, each is
// sent once, and no model call saw no new user text.
func TestMessageStoredDuringAnotherReplicasTurn(t *testing.T) {
	cases := []struct {
		name      string
		during    []string // what B receives inside A's first model call
		replays   bool     // messages of an adapter that replays them (held back for the turn's commit)
		toolFirst bool     // the model calls a tool before it answers
	}{
		{name: "one message", during: []string{"also this"}},
		{name: "one message, replayed events", during: []string{"also this"}, replays: true},
		{name: "two messages", during: []string{"also this", "and this"}},
		{name: "two messages, replayed events", during: []string{"also this", "and this"}, replays: true},
		{name: "one message during a tool round", during: []string{"also this"}, toolFirst: true},
		{name: "two messages during a tool round, replayed events", during: []string{"also this", "and this"}, replays: true, toolFirst: true},
	}
	onDrivers(t, func(t *testing.T, newH func() *harness) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				h := newH()
				m := &turnModel{toolFirst: tc.toolFirst}
				a, b := h.replica(m, "a"), h.replica(m, "b")
				msg := func(id, text string) core.Message {
					return core.Message{ID: id, Address: addr("rr"), Sender: core.Person{ID: "u1", Name: "ann"}, Text: text,
						Time: h.clock, Replays: tc.replays}
				}
				var fired atomic.Bool
				m.hook = func(by string, _ []string) {
					if by != "a" || !fired.CompareAndSwap(false, true) {
						return
					}
					for i, text := range tc.during {
						if err := b.eng.Handle(context.Background(), msg(fmt.Sprintf("ev-b%d", i), text)); err != nil {
							t.Errorf("B handling %q: %v", text, err)
						}
					}
				}
				if err := <-a.eng.Enqueue(context.Background(), msg("ev-a", "hello")); err != nil {
					t.Fatal(err)
				}
				waitAll(t, a, b)
				if !fired.Load() {
					t.Fatal("A made no model call")
				}
				checkAnswered(t, h, "rr", m, append([]string{"hello"}, tc.during...), a, b)
			})
		}
	})
}

func waitAll(t *testing.T, rs ...*replica) {
	t.Helper()
	for _, r := range rs {
		if err := r.eng.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// checkAnswered checks chat's stored transcript, the model's requests and the replicas'
// replies: each of people (the person messages sent) is stored once; each final answer in
// the transcript is the answer of a call whose new user text is exactly the user text
// stored since the answer before it, none is "(nothing)", and the transcript ends with
// one; every model call saw new user text; every answer is sent once and nothing else
// the agent said is.
func checkAnswered(t *testing.T, h *harness, chat string, m *turnModel, people []string, rs ...*replica) {
	t.Helper()
	tr, err := h.st.Transcript(context.Background(), sessionID(chat), 0)
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	for _, r := range rs {
		logs.WriteString(r.log.String())
	}
	dump := func() string {
		var b strings.Builder
		for _, e := range tr {
			fmt.Fprintf(&b, "  %s %s %q calls=%d\n", e.Role, e.Name, e.Content, len(e.ToolCalls))
		}
		for _, r := range m.requests() {
			fmt.Fprintf(&b, "  request by %s saw %q -> %q\n", r.by, r.fresh, r.answer)
		}
		return b.String() + logs.String()
	}
	stored := map[string]int{}
	var since []string // user text stored since the last answer
	answers := map[string]int{}
	for _, e := range tr {
		switch {
		case e.Role == core.RoleUser:
			if e.Name != "plangate" {
				stored[e.Content]++
			}
			since = append(since, e.Content)
		case e.Role == core.RoleAssistant && len(e.ToolCalls) == 0:
			if want := answerTo(since); e.Content != want {
				t.Errorf("stored answer %q follows the user text %q: its model call saw other text\n%s", e.Content, since, dump())
			}
			answers[e.Content]++
			since = nil
		}
	}
	if len(since) > 0 {
		t.Errorf("user text %q is stored after the last answer: never answered\n%s", since, dump())
	}
	for _, p := range people {
		if stored[p] != 1 {
			t.Errorf("person message %q is stored %d times, want once\n%s", p, stored[p], dump())
		}
	}
	if len(stored) != len(people) {
		t.Errorf("stored person messages %v, want %q", stored, people)
	}
	for _, r := range m.requests() {
		if len(r.fresh) == 0 {
			t.Errorf("a model call by %s saw no new user text\n%s", r.by, dump())
		}
	}
	sent := map[string]int{}
	for _, r := range rs {
		for _, rep := range r.out.all() {
			if rep.Kind == "" && strings.HasPrefix(rep.Text, "re: ") {
				sent[rep.Text]++
			} else if rep.Kind != core.ReplyText {
				t.Errorf("unexpected reply %q (%s)\n%s", rep.Text, rep.Kind, dump())
			}
		}
	}
	for text, n := range answers {
		if sent[text] != n {
			t.Errorf("answer %q is stored %d times and sent %d times\n%s", text, n, sent[text], dump())
		}
	}
	for text, n := range sent {
		if answers[text] == 0 {
			t.Errorf("answer %q is sent %d times and not stored\n%s", text, n, dump())
		}
	}
}

// TestDecisionStoredDuringAnotherReplicasTurn: B commits /plan accept while A's model
// call for a comment on the pending plan runs. The decision is no message for the agent:
// A's commit stays a conflict (its answer is not stored on top of the decision), the plan
// is accepted once, and the accepted plan's turn, which B left to A (A held the lease),
// runs once, with the decision as its newest user text. A comment stored before its turn
// (replays=false) gets today's conflict notice once; one held back for the turn's first
// commit (replays=true) had nothing stored, and is handled again on the row as the
// decision left it: the accepted plan's turn sees it, and no conflict notice is sent.
func TestDecisionStoredDuringAnotherReplicasTurn(t *testing.T) {
	onDrivers(t, func(t *testing.T, newH func() *harness) {
		for _, replays := range []bool{false, true} {
			t.Run(fmt.Sprintf("replays=%v", replays), func(t *testing.T) {
				h := newH()
				p := h.toPending("rr", "Notes")
				m := &turnModel{}
				a, b := h.replica(m, "a"), h.replica(m, "b")
				var fired atomic.Bool
				m.hook = func(by string, _ []string) {
					if by != "a" || !fired.CompareAndSwap(false, true) {
						return
					}
					accept := core.Message{ID: "ev-accept", Address: addr("rr"), Sender: core.Person{ID: "local", Name: "local"},
						Text: "/plan accept", Time: h.clock, Replays: replays}
					if err := b.eng.Handle(context.Background(), accept); err != nil {
						t.Errorf("B handling the accept: %v", err)
					}
				}
				comment := core.Message{ID: "ev-comment", Address: addr("rr"), Sender: core.Person{ID: "local", Name: "local"},
					Text: "looks good", Time: h.clock, Replays: replays}
				if err := <-a.eng.Enqueue(context.Background(), comment); err != nil {
					t.Fatal(err)
				}
				waitAll(t, a, b)
				ctx, sid := context.Background(), sessionID("rr")
				tr, err := h.st.Transcript(ctx, sid, 0)
				if err != nil {
					t.Fatal(err)
				}
				storedAnswers := map[string]int{}
				for _, e := range tr {
					if e.Role == core.RoleAssistant && len(e.ToolCalls) == 0 {
						storedAnswers[e.Content]++
					}
				}
				reqs := m.requests()
				if len(reqs) != 2 {
					t.Fatalf("%d model calls, want 2 (the comment's, then the accepted plan's turn): %+v", len(reqs), reqs)
				}
				if n := storedAnswers[reqs[0].answer]; n != 0 {
					t.Errorf("the comment's answer is stored on top of the decision (%d times)", n)
				}
				decided := reqs[1].fresh
				if len(decided) == 0 || !strings.HasPrefix(decided[len(decided)-1], "[PLAN_DECISION]: approved") {
					t.Errorf("the accepted plan's turn saw %q, want the decision as its newest user text", decided)
				}
				if storedAnswers[reqs[1].answer] != 1 || len(storedAnswers) != 1 {
					t.Errorf("stored answers %v, want the accepted plan's turn's once", storedAnswers)
				}
				sent := map[string]int{}
				for _, r := range []*replica{a, b} {
					for _, rep := range r.out.all() {
						sent[rep.Text]++
					}
				}
				notices := 1
				if replays {
					notices = 0
					if !slices.Contains(decided, "looks good") {
						t.Errorf("the accepted plan's turn saw %q, want the comment handled again before the decision", decided)
					}
				}
				if sent[reqs[1].answer] != 1 || sent["This conversation changed at the same moment elsewhere; nothing was changed. Please try again."] != notices {
					t.Errorf("replies %v: want the accepted plan's answer once and %d conflict notices", sent, notices)
				}
				evs, err := h.st.Events(ctx, sid)
				if err != nil {
					t.Fatal(err)
				}
				accepted := 0
				for _, e := range evs {
					if e.Kind == core.EventAccepted {
						accepted++
					}
				}
				s := h.session("rr")
				if accepted != 1 || h.plan(p.ID).Status != core.PlanAccepted || s.Phase != core.PhaseExecuting || len(s.Injections) != 0 {
					t.Errorf("accepted %d times, plan %s, phase %s, %d injections left; want accepted once, executing, none left",
						accepted, h.plan(p.ID).Status, s.Phase, len(s.Injections))
				}
			})
		}
	})
}

// A message queued for the lease holder outlives /plan off (which drops queued
// decisions), and the turn that takes it puts it in the transcript before its answer.
func TestQueuedMessageOutlivesPlanOff(t *testing.T) {
	h := newHarness(t)
	ctx, sid := context.Background(), sessionID("q")
	h.say("q", "local", "/plan on")
	if _, ok, err := h.st.AcquireLease(ctx, engine.SessionLease(sid), "someone-else", h.clock, time.Hour); err != nil || !ok {
		t.Fatalf("taking the lease: %v %v", ok, err)
	}
	h.say("q", "local", "please also check the docs")
	h.say("q", "local", "/plan off")
	want := []core.Injection{{Kind: core.InjectMessage, Text: "please also check the docs", Name: "local"}}
	if s := h.session("q"); s.Phase != core.PhaseOff || !slices.Equal(s.Injections, want) {
		t.Fatalf("after /plan off: phase %s, injections %+v; want off with the message queued", s.Phase, s.Injections)
	}
	if err := h.st.ReleaseLease(ctx, engine.SessionLease(sid), "someone-else"); err != nil {
		t.Fatal(err)
	}
	if n, err := h.eng.Resume(ctx, nil); err != nil || n != 1 {
		t.Fatalf("Resume = %d, %v; want the queued message's turn", n, err)
	}
	tr, err := h.st.Transcript(ctx, sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) != 2 || tr[0].Role != core.RoleUser || tr[0].Name != "local" || tr[0].Content != "please also check the docs" ||
		tr[1].Role != core.RoleAssistant || tr[1].Content != "ok" {
		t.Fatalf("transcript %+v, want the message, then its answer", tr)
	}
	if s := h.session("q"); len(s.Injections) != 0 {
		t.Fatalf("injections left: %+v", s.Injections)
	}
}

// racingStore is a replica's store whose first commit that queues a person's message for
// the lease holder loses a race: the holder commits the session row just before it.
type racingStore struct {
	core.Store
	holder core.Store // the lease holder's handle
	raced  atomic.Bool
}

func (s *racingStore) Commit(ctx context.Context, ch core.Change) (core.Session, error) {
	if ch.Session != nil && len(ch.Messages) == 0 && slices.ContainsFunc(ch.Session.Injections, func(inj core.Injection) bool {
		return inj.Kind == core.InjectMessage
	}) && s.raced.CompareAndSwap(false, true) {
		cur, err := s.holder.Session(ctx, ch.Session.ID)
		if err != nil {
			return core.Session{}, err
		}
		cur.UpdatedAt = cur.UpdatedAt.Add(time.Second)
		if _, err := s.holder.Commit(ctx, core.Change{Session: &cur}); err != nil {
			return core.Session{}, err
		}
	}
	return s.Store.Commit(ctx, ch)
}

// TestQueuedMessageThatLosesACommitRaceIsAnswered: B queues a message for A's turn, and
// the holder commits the row first, so B's commit conflicts. Nothing of the message was
// stored: B handles it again on the row as it is now, it is queued and answered, and the
// person gets no conflict notice.
func TestQueuedMessageThatLosesACommitRaceIsAnswered(t *testing.T) {
	onDrivers(t, func(t *testing.T, newH func() *harness) {
		h := newH()
		m := &turnModel{}
		a, b, _ := raceQueued(t, h, m, "rr")
		checkAnswered(t, h, "rr", m, []string{"hello", "also this"}, a, b)
	})
}

// TestQueuedMessageThatLosesACommitRaceIsRecorded: as in
// TestQueuedMessageThatLosesACommitRaceIsAnswered, B's first commit queuing "also this"
// for A's turn loses a race and B handles the message again. The commit that goes through
// records the event, so the same event delivered again, to either replica (a platform
// retrying a delivery it saw time out, the other replica's inbox), is a duplicate: the
// message is stored and answered once.
func TestQueuedMessageThatLosesACommitRaceIsRecorded(t *testing.T) {
	onDrivers(t, func(t *testing.T, newH func() *harness) {
		h := newH()
		m := &turnModel{}
		a, b, msg := raceQueued(t, h, m, "rd")
		calls := len(m.requests())
		for _, r := range []*replica{b, a} {
			if err := r.eng.Handle(context.Background(), msg("ev-b", "also this")); err != nil {
				t.Fatalf("the event delivered again: %v", err)
			}
		}
		waitAll(t, a, b)
		if n := len(m.requests()); n != calls {
			t.Errorf("the event delivered again made %d more model calls, want none", n-calls)
		}
		checkAnswered(t, h, "rd", m, []string{"hello", "also this"}, a, b)
	})
}

// gatedLeaseStore is a replica's store whose next lease acquisition, once armed, says so
// on reached and waits for open: the replica has read the session, and another replica's
// turn runs and commits before this one holds the lease.
type gatedLeaseStore struct {
	core.Store
	armed   atomic.Bool
	reached chan struct{}
	open    chan struct{}
}

func (s *gatedLeaseStore) AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (core.Lease, bool, error) {
	if s.armed.CompareAndSwap(true, false) {
		close(s.reached)
		<-s.open
	}
	return s.Store.AcquireLease(ctx, name, owner, now, ttl)
}

// TestTurnOnARowReadBeforeItsLease: B reads the chat's row (a message queued on it for
// A's turn) to handle "third", and takes the lease only after A's turn answered the queued
// message and let go. B's turn, on the row as B read it, sees the queued message as new
// again; its commit conflicts, and that answer is neither stored nor sent: "third" is
// stored and answered by a turn on the row as it is, so every message is answered once,
// by a model call that saw it as new, and the person gets no conflict notice.
func TestTurnOnARowReadBeforeItsLease(t *testing.T) {
	onDrivers(t, func(t *testing.T, newH func() *harness) {
		h := newH()
		m := &turnModel{}
		a := h.replica(m, "a")
		gs := &gatedLeaseStore{Store: h.openStore(), reached: make(chan struct{}), open: make(chan struct{})}
		b := h.replicaOn(gs, m, "b", nil)
		msg := func(id, text string) core.Message {
			return core.Message{ID: id, Address: addr("rl"), Sender: core.Person{ID: "u1", Name: "ann"}, Text: text, Time: h.clock, Replays: true}
		}
		var fired atomic.Bool
		var third <-chan error
		m.hook = func(by string, _ []string) {
			if by != "a" || !fired.CompareAndSwap(false, true) {
				return
			}
			if err := b.eng.Handle(context.Background(), msg("ev-b", "also this")); err != nil {
				t.Errorf("B handling: %v", err)
			}
			gs.armed.Store(true)
			third = b.eng.Enqueue(context.Background(), msg("ev-c", "third"))
			<-gs.reached // B has read the row with "also this" queued on it
		}
		if err := <-a.eng.Enqueue(context.Background(), core.Message{ID: "ev-a", Address: addr("rl"),
			Sender: core.Person{ID: "u1", Name: "ann"}, Text: "hello", Time: h.clock}); err != nil {
			t.Fatal(err)
		}
		waitAll(t, a)
		close(gs.open)
		if err := <-third; err != nil {
			t.Fatalf("B handling %q: %v", "third", err)
		}
		waitAll(t, a, b)
		checkAnswered(t, h, "rl", m, []string{"hello", "also this", "third"}, a, b)
	})
}

// TestSameEventOnTwoReplicasDuringItsTurn: replica A runs the turn of "hello" while the
// platform, whose delivery to A timed out, delivers the same event to replica B, which
// finds A holding the lease and queues the text for A's turn with the event's key. A's
// commit then finds the key recorded; the message is answered once all the same, and
// nothing is left queued on the row.
func TestSameEventOnTwoReplicasDuringItsTurn(t *testing.T) {
	onDrivers(t, func(t *testing.T, newH func() *harness) {
		for _, replays := range []bool{false, true} {
			t.Run(fmt.Sprintf("replays=%v", replays), func(t *testing.T) {
				h := newH()
				m := &turnModel{}
				a, b := h.replica(m, "a"), h.replica(m, "b")
				hello := core.Message{ID: "ev-1", Address: addr("dup"), Sender: core.Person{ID: "u1", Name: "ann"}, Text: "hello",
					Time: h.clock, Replays: replays}
				var fired atomic.Bool
				m.hook = func(by string, _ []string) {
					if by == "a" && fired.CompareAndSwap(false, true) {
						if err := b.eng.Handle(context.Background(), hello); err != nil {
							t.Errorf("B handling the redelivery: %v", err)
						}
					}
				}
				if err := <-a.eng.Enqueue(context.Background(), hello); err != nil {
					t.Fatal(err)
				}
				waitAll(t, a, b)
				if !fired.Load() {
					t.Fatal("A made no model call")
				}
				checkAnswered(t, h, "dup", m, []string{"hello"}, a, b)
				if s := h.session("dup"); len(s.Injections) > 0 {
					t.Errorf("left queued on the row: %+v", s.Injections)
				}
			})
		}
	})
}
