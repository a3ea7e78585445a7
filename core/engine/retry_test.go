package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// flakySender fails while down is set and records what it sent otherwise.
type flakySender struct {
	mu   sync.Mutex
	down bool
	sent []core.Reply
}

func (f *flakySender) Send(_ context.Context, r core.Reply) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return "", errors.New("platform unavailable")
	}
	f.sent = append(f.sent, r)
	return "m1", nil
}

func (f *flakySender) set(down bool) { f.mu.Lock(); f.down = down; f.mu.Unlock() }
func (f *flakySender) count() int    { f.mu.Lock(); defer f.mu.Unlock(); return len(f.sent) }

// A reply whose send failed is sent again while the process runs, once its backoff has
// passed on the engine's clock, and only then; a row that is sent is not sent again.
func TestRetryUnsentBacksOffThenDelivers(t *testing.T) {
	h := newHarness(t)
	out := &flakySender{down: true}
	p := h.process(out, nil, nil)
	_ = p.eng.Handle(context.Background(), core.Message{ID: "ev-r1", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "/plan on", Time: h.clock})
	if rows := unsent(t, h.st); len(rows) != 1 || rows[0].Attempts != 1 {
		t.Fatalf("setup: outbox %+v, want one failed row", rows)
	}
	out.set(false)
	ctx := context.Background()
	if n := p.eng.RetryUnsent(ctx, nil, 0); n != 0 || out.count() != 0 {
		t.Fatalf("retried at once: %d sent", n)
	}
	h.clock = h.clock.Add(29 * time.Second)
	if n := p.eng.RetryUnsent(ctx, nil, 0); n != 0 {
		t.Fatalf("retried before the backoff passed: %d sent", n)
	}
	h.clock = h.clock.Add(2 * time.Second)
	if n := p.eng.RetryUnsent(ctx, nil, 0); n != 1 || out.count() != 1 || len(unsent(t, h.st)) != 0 {
		t.Fatalf("after the backoff: %d sent, sender %d, unsent %d; want 1, 1, 0", n, out.count(), len(unsent(t, h.st)))
	}
	h.clock = h.clock.Add(time.Hour)
	if n := p.eng.RetryUnsent(ctx, nil, 0); n != 0 || out.count() != 1 {
		t.Fatalf("a sent row was sent again: %d", n)
	}
}

// The backoff doubles with each failed attempt in a row, up to retryMax, and does not
// stop after any number of attempts: only age gives a row up. A row older than
// outbox_max_age is dropped, not retried, and the chat gets the notice.
func TestRetryUnsentDoublesAndRespectsMaxAge(t *testing.T) {
	h := newHarness(t)
	out := &flakySender{down: true}
	p := h.process(out, nil, nil)
	_ = p.eng.Handle(context.Background(), core.Message{ID: "ev-r2", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "/plan on", Time: h.clock})
	ctx := context.Background()
	h.clock = h.clock.Add(31 * time.Second)
	if n := p.eng.RetryUnsent(ctx, nil, 0); n != 0 {
		t.Fatalf("sent while down: %d", n)
	}
	if rows := unsent(t, h.st); len(rows) != 1 || rows[0].Attempts != 2 {
		t.Fatalf("after the first retry: %+v, want 2 attempts", rows)
	}
	out.set(false)
	h.clock = h.clock.Add(45 * time.Second) // the second retry waits 60 s
	if n := p.eng.RetryUnsent(ctx, nil, 0); n != 0 {
		t.Fatalf("second retry came early: %d", n)
	}
	out.set(true)
	// Well past five attempts (the waits 60 s, 2, 4, 8, then 10 min each): still retried.
	for _, wait := range []time.Duration{20 * time.Second, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute, 10 * time.Minute} {
		h.clock = h.clock.Add(wait)
		_ = p.eng.RetryUnsent(ctx, nil, 0)
	}
	if rows := unsent(t, h.st); len(rows) != 1 || rows[0].Attempts != 8 {
		t.Fatalf("after 8 failed attempts: %+v, want the row kept with 8 attempts", rows)
	}
	h.clock = h.clock.Add(9 * time.Minute)
	_ = p.eng.RetryUnsent(ctx, nil, 0)
	if rows := unsent(t, h.st); len(rows) != 1 || rows[0].Attempts != 8 {
		t.Fatalf("retried before the capped backoff of 10 min: %+v", rows)
	}
	out.set(false)
	h.clock = h.clock.Add(2 * time.Hour)
	if n := p.eng.RetryUnsent(ctx, nil, time.Hour); n != 0 || len(unsent(t, h.st)) != 0 {
		t.Fatalf("a row older than outbox_max_age: %d sent, unsent %d; want it dropped", n, len(unsent(t, h.st)))
	}
	if out.count() != 1 || !strings.HasPrefix(out.sent[0].Text, "A reply could not be delivered during the outage") {
		t.Fatalf("sent %+v; want only the notice of the drop", out.sent)
	}
}

// A row a killed process left, failed or not, is the start-up backlog's: the retry loop of
// the next process does not send it beside the backlog.
func TestRetryUnsentLeavesThePreviousProcessesRows(t *testing.T) {
	h := newHarness(t)
	a := h.process(failSender{}, nil, nil)
	_ = a.eng.Handle(context.Background(), core.Message{ID: "ev-r3", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "/plan on", Time: h.clock})
	b := h.process(nil, nil, nil)
	h.clock = h.clock.Add(time.Hour - time.Minute)
	if n := b.eng.RetryUnsent(context.Background(), nil, 0); n != 0 || b.out.count() != 0 {
		t.Fatalf("the new process's retry sent %d rows of the old one's", n)
	}
	if n, err := b.eng.DeliverUnsent(context.Background(), nil, 0, nil); err != nil || n != 1 || b.out.count() != 1 {
		t.Fatalf("the backlog: %d, %v; sender %d", n, err, b.out.count())
	}
}
