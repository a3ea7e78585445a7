package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/nudges"
)

// heldSender holds its first send until release is closed (entered says it began); every
// send gets through.
type heldSender struct {
	recorder
	first   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (s *heldSender) Send(ctx context.Context, r core.Reply) (string, error) {
	if s.first.CompareAndSwap(false, true) {
		close(s.entered)
		<-s.release
	}
	return s.recorder.Send(ctx, r)
}

// A reply whose send is still in flight when it passes outbox_max_age is not given up
// beside that send: the send that gets through marks it sent, and no drop is recorded or
// told to the chat.
func TestRetryLeavesAReplyInFlightToItsDelivery(t *testing.T) {
	h := newHarness(t)
	clock := coretest.NewClock(day)
	out := &heldSender{entered: make(chan struct{}), release: make(chan struct{})}
	eng := h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: h.model, Tools: h.tools, Out: out,
		Now: clock.Now, NudgeSpecs: nudges.Specs{}}))
	ctx := context.Background()
	h.model.push(sessionID("a"), text("answer a00"))
	done := make(chan error, 1)
	go func() {
		done <- eng.Handle(ctx, core.Message{ID: "ev-1", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "question", Time: clock.Now()})
	}()
	<-out.entered
	clock.Add(time.Hour)
	eng.RetryUnsent(ctx, nil, time.Minute) // the row in flight is an hour old
	close(out.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	eng.RetryUnsent(ctx, nil, time.Minute)
	if d := droppedRows(t, h, sessionID("a")); len(d) != 0 {
		t.Fatalf("dropped %q while its send was in flight (and then delivered)", d)
	}
	if rows := unsent(t, h.st); len(rows) != 0 {
		t.Fatalf("left unsent: %+v", rows)
	}
	if got := out.all(); len(got) != 1 || got[0].Text != "answer a00" {
		t.Fatalf("sent %+v; want the answer alone, no notice of a drop", got)
	}
}

// A chat whose platform stays down for longer than outbox_max_age with nothing more to
// say: its one answer is given up, then the notice about it ages out too. That notice
// gives its count back, so once the platform takes the chat's messages again the chat
// gets exactly one notice, about the answer (the notices that could not be delivered are
// not themselves counted as replies lost).
func TestANoticeThatAgesOutIsToldAgain(t *testing.T) {
	const maxAge = 2 * time.Minute
	h := newHarness(t)
	clock := coretest.NewClock(day)
	out := newOutageSender(clock.Now)
	eng := h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: h.model, Tools: h.tools, Out: out,
		Now: clock.Now, NudgeSpecs: nudges.Specs{}}))
	ctx := context.Background()
	out.set("a", errors.New("telegram answered 500 Internal Server Error"))
	h.model.push(sessionID("a"), text("answer a00"))
	if err := eng.Handle(ctx, core.Message{ID: "ev-1", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "question", Time: clock.Now()}); err != nil {
		t.Fatal(err)
	}
	for range 5 * 8 { // five ages of retries while down
		clock.Add(15 * time.Second)
		eng.RetryUnsent(ctx, nil, maxAge)
	}
	if n := len(droppedRows(t, h, sessionID("a"))); n < 2 {
		t.Fatalf("%d rows given up while down; want the answer and at least one notice; tries %v unsent %+v", n, out.tries("a"), unsent(t, h.st))
	}
	out.set("a", nil)
	for range 5 * 8 {
		clock.Add(15 * time.Second)
		eng.RetryUnsent(ctx, nil, maxAge)
	}
	want := `A reply could not be delivered during the outage; it began "answer a00". /plan shows where things stand.`
	if got := out.texts("a"); len(got) != 1 || got[0] != want {
		t.Fatalf("the chat was sent %q; want only %q", got, want)
	}
	if rows := unsent(t, h.st); len(rows) != 0 {
		t.Fatalf("left unsent: %+v", rows)
	}
}
