package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
)

// Durability across a killed process: the outbox, read-only answers, reminders. A "new
// process" is a second store handle on the same file with an engine of its own.

// gateSender blocks every Send until release is closed, then fails it: a process killed
// after the commit, before the platform got the reply.
type gateSender struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newGateSender() *gateSender {
	return &gateSender{entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gateSender) Send(ctx context.Context, r core.Reply) (string, error) {
	g.once.Do(func() { close(g.entered) })
	<-g.release
	return "", errors.New("killed")
}

// failSender fails every Send.
type failSender struct{}

func (failSender) Send(context.Context, core.Reply) (string, error) {
	return "", errors.New("platform unavailable")
}

// process is another plangate process on the harness's database file.
type process struct {
	st    *store.Store
	eng   *engine.Engine
	out   *recorder
	model *fakeModel
	log   *bytes.Buffer
}

var processes atomic.Int64

// holdFirstCall makes the process's first model call wait: entered is closed once it
// has started, and it goes on once release is closed.
func (p *process) holdFirstCall() (entered, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	p.model.Hook(func(core.ModelRequest) {
		once.Do(func() {
			close(entered)
			<-release
		})
	})
	return entered, release
}

func (h *harness) process(out core.Sender, model *fakeModel, tools core.Toolbox) *process {
	h.t.Helper()
	st := h.openStore()
	p := &process{st: st, model: model, log: &bytes.Buffer{}}
	if out == nil {
		p.out = &recorder{}
		out = p.out
	}
	if p.model == nil {
		p.model = newFakeModel()
	}
	log := slog.New(slog.NewTextHandler(&syncWriter{w: p.log}, nil))
	n := processes.Add(1)
	p.eng = engine.NewEngine(h.cfg, engine.Deps{Store: st, Model: p.model, Tools: tools, Out: out, Log: log,
		Now: func() time.Time { return h.clock }, Owner: fmt.Sprintf("test-process-%d", n)})
	return p
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func unsent(t *testing.T, st *store.Store) []core.Outgoing {
	t.Helper()
	rows, err := st.UnsentOutbox(context.Background(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func countText(rs []core.Reply, sub string) int {
	n := 0
	for _, r := range rs {
		if strings.Contains(r.Text, sub) {
			n++
		}
	}
	return n
}

// A reply is committed with the transition that produced it; when the process dies
// before the platform has it, the next process delivers it, once.
func TestOutboxDeliversAfterCrashBetweenCommitAndSend(t *testing.T) {
	h := newHarness(t)
	gate := newGateSender()
	a := h.process(gate, nil, nil)
	m := core.Message{ID: "ev-1", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "/plan on", Time: h.clock}
	done := a.eng.Enqueue(context.Background(), m)
	<-gate.entered // committed, now "sending"

	if s := h.session("a"); s.Phase != core.PhasePlanning {
		t.Fatalf("phase %s: the transition was not committed before the send", s.Phase)
	}
	rows := unsent(t, h.st)
	if len(rows) != 1 || !strings.Contains(rows[0].Reply.Text, "Plan mode is on") || rows[0].Reply.InReplyTo != "ev-1" {
		t.Fatalf("outbox while sending: %+v", rows)
	}

	b := h.process(nil, nil, nil) // the restarted process
	n, err := b.eng.DeliverUnsent(context.Background(), []string{"terminal"}, 0, nil)
	if err != nil || n != 1 {
		t.Fatalf("DeliverUnsent = %d, %v", n, err)
	}
	close(gate.release) // the old process's send never reached the platform
	<-done
	if got := countText(b.out.all(), "Plan mode is on"); got != 1 {
		t.Fatalf("delivered %d times: %+v", got, b.out.all())
	}
	if rows := unsent(t, h.st); len(rows) != 0 {
		t.Fatalf("still unsent after delivery: %+v", rows)
	}
	// The redelivered event is a duplicate, and nothing is sent again.
	if err := b.eng.Handle(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if n, err := b.eng.DeliverUnsent(context.Background(), nil, 0, nil); err != nil || n != 0 || b.out.count() != 1 {
		t.Fatalf("second start: DeliverUnsent = %d, %v; replies %d", n, err, b.out.count())
	}
}

// An agent's answer is an outbox row of the commit that stores it in the transcript.
func TestOutboxHoldsTheAgentsAnswer(t *testing.T) {
	h := newHarness(t)
	a := h.process(failSender{}, nil, nil)
	a.model.push(sessionID("a"), text("Here is my answer."))
	_ = a.eng.Handle(context.Background(), core.Message{ID: "ev-2", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "question?", Time: h.clock})
	rows := unsent(t, h.st)
	if len(rows) != 1 || rows[0].Reply.Text != "Here is my answer." || rows[0].Attempts != 1 {
		t.Fatalf("outbox: %+v", rows)
	}
	b := h.process(nil, nil, nil)
	if n, err := b.eng.DeliverUnsent(context.Background(), nil, 0, nil); err != nil || n != 1 {
		t.Fatalf("DeliverUnsent = %d, %v", n, err)
	}
	if got := b.out.all(); len(got) != 1 || got[0].Text != "Here is my answer." {
		t.Fatalf("delivered: %+v", got)
	}
}

// Rows older than outbox_max_age are dropped with a log line and the chat told, rows of
// channels this process does not serve are left alone.
func TestOutboxDropsStaleRows(t *testing.T) {
	h := newHarness(t)
	a := h.process(failSender{}, nil, nil)
	_ = a.eng.Handle(context.Background(), core.Message{ID: "ev-3", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "/plan on", Time: h.clock})
	if len(unsent(t, h.st)) != 1 {
		t.Fatal("setup: no unsent row")
	}
	b := h.process(nil, nil, nil)
	if n, err := b.eng.DeliverUnsent(context.Background(), []string{"telegram"}, time.Hour, nil); err != nil || n != 0 || len(unsent(t, h.st)) != 1 {
		t.Fatalf("another channel's process touched the row: %d, %v", n, err)
	}
	h.clock = h.clock.Add(2 * time.Hour)
	if n, err := b.eng.DeliverUnsent(context.Background(), []string{"terminal"}, time.Hour, nil); err != nil || n != 0 {
		t.Fatalf("DeliverUnsent = %d, %v", n, err)
	}
	got := b.out.all()
	if len(got) != 1 || !strings.HasPrefix(got[0].Text, `A reply could not be delivered during the outage; it began "Plan mode is on`) || len(unsent(t, h.st)) != 0 {
		t.Fatalf("stale row: sent %+v, unsent %v; want only the notice of the dropped one", got, unsent(t, h.st))
	}
	mustContain(t, b.log.String(), "dropping an unsent reply", "outbox_max_age")
}

// A read-only command records its event id: a replay after a kill is not answered twice.
func TestReadOnlyCommandAnsweredOnceAcrossRestart(t *testing.T) {
	h := newHarness(t)
	m := core.Message{ID: "ev-status", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "/plan status", Time: h.clock}
	if err := h.eng.Handle(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if h.out.count() != 1 {
		t.Fatalf("status replies: %d", h.out.count())
	}
	h.restart()
	if seen, err := h.st.SeenInbound(context.Background(), core.InboundKey{Channel: "terminal", Account: "local", EventID: "ev-status"}); err != nil || !seen {
		t.Fatalf("status event not recorded: %v, %v", seen, err)
	}
	if err := h.eng.Handle(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if h.out.count() != 1 {
		t.Fatalf("the replayed /plan status was answered again: %d replies", h.out.count())
	}
}

// A claimed reminder is in the outbox with its claim: a kill before delivery does not
// lose it, and the ledger's "fired" agrees with what the chat got.
func TestReminderClaimedThenCrashIsDeliveredAfterRestart(t *testing.T) {
	h := newHarness(t, func(c *engine.Config) { c.Nudges = []time.Duration{10 * time.Minute} })
	h.toPending("a", "Remind me")
	ns, err := h.st.Nudges(context.Background(), sessionID("a"))
	if err != nil || len(ns) != 1 {
		t.Fatalf("nudges: %+v, %v", ns, err)
	}
	n := ns[0]
	h.clock = n.NextFireAt
	ok, err := h.eng.ClaimReminder(context.Background(), n, n.NextFireAt, h.clock, time.Time{})
	if err != nil || !ok {
		t.Fatalf("ClaimReminder = %v, %v", ok, err)
	}
	// Killed before Nudge delivered it.
	before := h.out.count()
	h.restart()
	if n, err := h.eng.DeliverUnsent(context.Background(), nil, 0, nil); err != nil || n != 1 {
		t.Fatalf("DeliverUnsent = %d, %v", n, err)
	}
	got := h.out.since(before)
	if len(got) != 1 || got[0].Kind != core.ReplyNudge || !strings.Contains(got[0].Text, "has waited") {
		t.Fatalf("delivered after restart: %+v", got)
	}
	ns, _ = h.st.Nudges(context.Background(), sessionID("a"))
	if ns[0].Fired != 1 {
		t.Fatalf("fired = %d, want 1", ns[0].Fired)
	}
	// The same occurrence cannot be claimed again.
	if ok, err := h.eng.ClaimReminder(context.Background(), n, n.NextFireAt, h.clock, time.Time{}); err != nil || ok {
		t.Fatalf("second claim = %v, %v", ok, err)
	}
}

// Without a crash, Nudge delivers the claimed row (once) and a reminder whose decision was
// made meanwhile is dropped, not sent.
func TestReminderClaimDeliveredByNudgeOrDropped(t *testing.T) {
	h := newHarness(t, func(c *engine.Config) { c.Nudges = []time.Duration{10 * time.Minute, 20 * time.Minute} })
	h.toPending("a", "Remind me")
	ns, _ := h.st.Nudges(context.Background(), sessionID("a"))
	first, second := ns[0], ns[1]
	h.clock = first.NextFireAt
	if ok, err := h.eng.ClaimReminder(context.Background(), first, first.NextFireAt, h.clock, time.Time{}); err != nil || !ok {
		t.Fatalf("claim: %v, %v", ok, err)
	}
	before := h.out.count()
	if err := h.eng.Nudge(context.Background(), first, first.NextFireAt); err != nil {
		t.Fatal(err)
	}
	if got := h.out.since(before); len(got) != 1 || len(unsent(t, h.st)) != 0 {
		t.Fatalf("after Nudge: sent %+v, unsent %v", got, unsent(t, h.st))
	}
	h.clock = second.NextFireAt
	if ok, err := h.eng.ClaimReminder(context.Background(), second, second.NextFireAt, h.clock, time.Time{}); err != nil || !ok {
		t.Fatalf("claim: %v, %v", ok, err)
	}
	h.say("a", "local", "/plan accept")
	before = h.out.count()
	if err := h.eng.Nudge(context.Background(), second, second.NextFireAt); err != nil {
		t.Fatal(err)
	}
	if got := h.out.since(before); countText(got, "has waited") != 0 || len(unsent(t, h.st)) != 0 {
		t.Fatalf("a moot reminder: sent %+v, unsent %v", got, unsent(t, h.st))
	}
}

// A refusal that audits nothing has no transition of its own: with an event id it is
// committed lazily with its event, so a replay is not answered twice.
func TestRefusalRecordsItsEvent(t *testing.T) {
	h := newHarness(t)
	m := core.Message{ID: "ev-refused", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "/plan accept", Time: h.clock}
	if err := h.eng.Handle(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if h.out.count() != 1 || len(unsent(t, h.st)) != 0 {
		t.Fatalf("replies %d, unsent %v", h.out.count(), unsent(t, h.st))
	}
	h.restart()
	if err := h.eng.Handle(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if h.out.count() != 1 {
		t.Fatalf("the replayed refusal was answered again: %+v", h.out.all())
	}
}
