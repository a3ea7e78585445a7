package engine_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/metrics"
	"github.com/plangate/plangate/nudges"
)

// outageSender is a platform whose send side fails for the chats in down, with that
// chat's error; it records every attempt at the engine's clock and every reply it took.
type outageSender struct {
	mu       sync.Mutex
	now      func() time.Time
	down     map[string]error
	attempts map[string][]time.Time
	sent     map[string][]string
}

func newOutageSender(now func() time.Time) *outageSender {
	return &outageSender{now: now, down: map[string]error{}, attempts: map[string][]time.Time{}, sent: map[string][]string{}}
}

func (f *outageSender) Send(_ context.Context, r core.Reply) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	chat := r.To.Chat
	f.attempts[chat] = append(f.attempts[chat], f.now())
	if err := f.down[chat]; err != nil {
		return "", err
	}
	f.sent[chat] = append(f.sent[chat], r.Text)
	return fmt.Sprintf("m%d", len(f.sent[chat])), nil
}

func (f *outageSender) set(chat string, err error) { f.mu.Lock(); f.down[chat] = err; f.mu.Unlock() }

func (f *outageSender) texts(chat string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sent[chat]...)
}

func (f *outageSender) tries(chat string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.attempts[chat]...)
}

// rateLimited is a platform's 429 as the adapters' transport reports it: it says how long
// to wait (core.SendDelay).
type rateLimited struct{ wait time.Duration }

func (e rateLimited) Error() string        { return fmt.Sprintf("rate limited for %v", e.wait) }
func (e rateLimited) Delay() time.Duration { return e.wait }

// A platform whose send side fails for one chat for longer than outbox_max_age (at 500,
// and at 429 with a Retry-After longer than the backoff): that chat's replies leave in
// commit order once it is back, none is tried before the platform's wait has passed, the
// other chat is never held, each reply is either delivered or dropped, and the dropped
// ones are counted and told to the chat in one notice.
func TestOutageKeepsEachChatsOrderAndTellsTheDrops(t *testing.T) {
	const (
		maxAge  = 2 * time.Minute
		outage  = 150 * time.Second
		after   = time.Minute      // messages keep coming after the outage
		every   = 15 * time.Second // RetryLoop's interval
		message = 10 * time.Second // between a chat's messages
	)
	for _, tc := range []struct {
		name string
		err  error
		wait time.Duration // the least gap between two attempts in the held chat
	}{
		{"500", errors.New("telegram answered 500 Internal Server Error"), 30 * time.Second},
		{"429 retry_after", rateLimited{100 * time.Second}, 100 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			out := newOutageSender(func() time.Time { return h.clock })
			obs := metrics.New()
			h.eng = h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: h.model, Tools: h.tools, Out: out,
				Now: func() time.Time { return h.clock }, NudgeSpecs: nudges.Specs{}, Observer: obs}))
			ctx := context.Background()
			say := func(chat string, i int) {
				t.Helper()
				h.model.push(sessionID(chat), text(fmt.Sprintf("answer %s%02d", chat, i)))
				m := core.Message{ID: fmt.Sprintf("ev-%s%d", chat, i), Address: addr(chat), Sender: core.Person{ID: "local"}, Text: fmt.Sprintf("question %d", i), Time: h.clock}
				if err := h.eng.Handle(ctx, m); err != nil {
					t.Fatalf("handling %s: %v", m.ID, err)
				}
			}
			retryAt := h.clock
			tick := func() {
				if !h.clock.Before(retryAt) {
					h.eng.RetryUnsent(ctx, nil, maxAge)
					retryAt = h.clock.Add(every)
				}
			}

			out.set("a", tc.err)
			start, n := h.clock, 0
			for ; h.clock.Sub(start) < outage; n++ {
				say("a", n)
				say("b", n)
				tick()
				h.clock = h.clock.Add(message)
			}
			if got := out.texts("a"); len(got) != 0 {
				t.Fatalf("chat a took replies while down: %q", got)
			}
			if got := out.texts("b"); len(got) != n || len(out.tries("b")) != n {
				t.Fatalf("chat b, not held: %d of %d replies sent during a's outage (%d attempts)", len(got), n, len(out.tries("b")))
			}
			out.set("a", nil)
			for ; h.clock.Sub(start) < outage+after; n++ {
				say("a", n)
				say("b", n)
				tick()
				h.clock = h.clock.Add(message)
			}
			for range 60 { // 15 min of retry ticks
				h.clock = h.clock.Add(every)
				tick()
			}

			// Order: a's delivered answers are in commit order, with one notice among them.
			got := out.texts("a")
			var answers, notices []string
			for _, s := range got {
				if strings.HasPrefix(s, "answer a") {
					answers = append(answers, s)
				} else {
					notices = append(notices, s)
				}
			}
			for i := 1; i < len(answers); i++ {
				if answers[i-1] >= answers[i] {
					t.Fatalf("chat a's replies out of order at %d: %q", i, answers)
				}
			}
			if len(notices) != 1 || len(answers) == 0 {
				t.Fatalf("chat a got %d answers and the notices %q; want some answers and one notice", len(answers), notices)
			}
			notice := notices[0]
			// No silent drop: each answer was delivered or dropped, and the drops are told.
			dropped := droppedRows(t, h, sessionID("a"))
			if len(dropped) == 0 || len(answers)+len(dropped) != n {
				t.Fatalf("chat a: %d delivered + %d dropped, want %d (and some dropped: the outage outlasts outbox_max_age)", len(answers), len(dropped), n)
			}
			for i, s := range answers { // the dropped are the oldest, every later one delivered
				if want := fmt.Sprintf("answer a%02d", len(dropped)+i); s != want {
					t.Fatalf("chat a's delivered answer %d is %q, want %q: %q", i, s, want, answers)
				}
			}
			last := fmt.Sprintf("answer a%02d", len(dropped)-1)
			want := fmt.Sprintf(`%d replies could not be delivered during the outage; the last began "%s". /plan shows where things stand.`, len(dropped), last)
			if notice != want {
				t.Fatalf("notice %q, want %q", notice, want)
			}
			rec := httptest.NewRecorder()
			obs.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			if want := fmt.Sprintf(`plangate_outbox_dropped_total{channel="terminal",reason="expired"} %d`+"\n", len(dropped)); !strings.Contains(rec.Body.String(), want) {
				t.Fatalf("/metrics lacks %q", want)
			}
			if rows := unsent(t, h.st); len(rows) != 0 {
				t.Fatalf("rows left unsent: %+v", rows)
			}
			if got := droppedRows(t, h, sessionID("b")); len(got) != 0 {
				t.Fatalf("chat b lost replies: %+v", got)
			}

			// Retry-After and backoff: no attempt in the held chat came before the wait.
			tries := out.tries("a")
			for i := 1; i < len(tries); i++ {
				if gap := tries[i].Sub(tries[i-1]); gap < tc.wait && tries[i-1].Sub(start) < outage {
					t.Fatalf("attempt %d came %v after a failed one (want at least %v): %v", i, gap, tc.wait, tries)
				}
			}
			if len(tries) > len(got)+int(outage/tc.wait)+2 {
				t.Fatalf("chat a: %d attempts for %d replies: later replies were tried while held", len(tries), len(got))
			}
		})
	}
}

// droppedRows lists the outbox rows of session that were given up.
func droppedRows(t *testing.T, h *harness, session string) []string {
	t.Helper()
	rows, err := h.st.DroppedOutbox(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, o := range rows {
		if o.SessionID == session {
			texts = append(texts, o.Reply.Text)
		}
	}
	return texts
}

// refusingSender refuses replies of one kind for good and records the rest.
type refusingSender struct {
	recorder
	kind core.ReplyKind
}

func (s *refusingSender) Send(ctx context.Context, r core.Reply) (string, error) {
	if r.Kind == s.kind {
		return "", fmt.Errorf("telegram sendDocument: Bad Request: file too big: %w", core.ErrRefused)
	}
	return s.recorder.Send(ctx, r)
}

// A plan the platform refuses for good is dropped at once and counted; its chat gets the
// plan's own notice and no second one about the drop, and the session is not held.
func TestRefusedPlanIsToldOnce(t *testing.T) {
	h := newHarness(t)
	out := &refusingSender{kind: core.ReplyPlan}
	obs := &countingObserver{counts: map[string]int{}}
	h.out = &out.recorder
	h.eng = h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: h.model, Tools: h.tools, Out: out,
		Now: func() time.Time { return h.clock }, NudgeSpecs: nudges.Specs{}, Observer: obs}))
	h.toPending("c", "Docs")
	h.say("c", "local", "/plan status")
	for range 3 {
		h.clock = h.clock.Add(time.Minute)
		h.eng.RetryUnsent(context.Background(), nil, 0)
	}
	texts := joinTexts(out.all())
	if n := strings.Count(texts, "could not be delivered"); n != 1 || !strings.Contains(texts, "The plan could not be delivered here") {
		t.Fatalf("want the plan's own notice once, got:\n%s", texts)
	}
	if !strings.Contains(lastText(out.all()), "Docs") {
		t.Fatalf("the status after the refusal was held or lost:\n%s", texts)
	}
	if c, _ := obs.snapshot(); c["dropped terminal refused"] != 1 {
		t.Fatalf("drops counted %v, want one refused", c)
	}
	if d := droppedRows(t, h, sessionID("c")); len(d) != 1 || len(unsent(t, h.st)) != 0 {
		t.Fatalf("dropped %q, unsent %+v; want the plan dropped and nothing waiting", d, unsent(t, h.st))
	}
}

// A read-only command's answer in a held chat waits behind the earlier replies (it is an
// outbox row of its event's record then), and is not tried before them.
func TestReadOnlyAnswerWaitsBehindHeldReplies(t *testing.T) {
	h := newHarness(t)
	out := newOutageSender(func() time.Time { return h.clock })
	h.eng = h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: h.model, Tools: h.tools, Out: out,
		Now: func() time.Time { return h.clock }, NudgeSpecs: nudges.Specs{}}))
	ctx := context.Background()
	out.set("a", errors.New("telegram answered 500 Internal Server Error"))
	h.model.push(sessionID("a"), text("answer a00"))
	for _, m := range []core.Message{
		{ID: "ev-1", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "question", Time: h.clock},
		{ID: "ev-2", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "/plan status", Time: h.clock},
	} {
		if err := h.eng.Handle(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(out.tries("a")); n != 1 || len(unsent(t, h.st)) != 2 {
		t.Fatalf("%d attempts, %d unsent; want the answer tried once and the status waiting behind it", n, len(unsent(t, h.st)))
	}
	out.set("a", nil)
	h.clock = h.clock.Add(31 * time.Second)
	if n := h.eng.RetryUnsent(ctx, nil, 0); n != 2 {
		t.Fatalf("retry sent %d, want 2", n)
	}
	got := out.texts("a")
	if len(got) != 2 || got[0] != "answer a00" || !strings.Contains(got[1], "phase") {
		t.Fatalf("sent %q; want the answer, then the status", got)
	}
	// The event was recorded with its answer: a redelivery is not answered again.
	if err := h.eng.Handle(ctx, core.Message{ID: "ev-2", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "/plan status", Time: h.clock}); err != nil {
		t.Fatal(err)
	}
	if n := len(out.texts("a")); n != 2 {
		t.Fatalf("a redelivered status was answered again: %q", out.texts("a"))
	}
}

// A row a gone process left ahead of a held chat's rows is claimed and sent first by the
// retries, so it neither holds them until it ages out nor goes out after them.
func TestRetryTakesAGoneProcessesRowAheadOfAHeldChat(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	a := h.process(failSender{}, nil, nil)
	if err := a.eng.Handle(ctx, core.Message{ID: "ev-1", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "/plan on", Time: h.clock}); err != nil {
		t.Fatal(err)
	}
	out := newOutageSender(func() time.Time { return h.clock })
	b := h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: h.model, Tools: h.tools, Out: out,
		Now: func() time.Time { return h.clock }, NudgeSpecs: nudges.Specs{}, Owner: "test-b"}))
	out.set("a", errors.New("telegram answered 502 Bad Gateway"))
	if err := b.Handle(ctx, core.Message{ID: "ev-2", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "/plan off", Time: h.clock}); err != nil {
		t.Fatal(err)
	}
	out.set("a", nil)
	h.clock = h.clock.Add(31 * time.Second)
	if n := b.RetryUnsent(ctx, nil, 0); n != 2 {
		t.Fatalf("retry sent %d, want the gone process's row and then this one's", n)
	}
	got := out.texts("a")
	if len(got) != 2 || !strings.HasPrefix(got[0], "Plan mode is on") || !strings.HasPrefix(got[1], "Plan mode is off") {
		t.Fatalf("sent %q; want the older reply first", got)
	}
	if rows := unsent(t, h.st); len(rows) != 0 {
		t.Fatalf("left unsent: %+v", rows)
	}
}
