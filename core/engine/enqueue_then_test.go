package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/plangate/plangate/core"
)

// EnqueueThen reports each message's outcome by calling then once, right after the
// message was handled and before the session's next message starts; a failed message (its
// context ended) reports its error as Enqueue's channel would, and a read-only command answered beside
// a running turn reports too.
func TestEnqueueThenReportsEachOutcomeInOrder(t *testing.T) {
	h := newHarness(t)
	h.model.Block(make(chan struct{}))
	entered := make(chan struct{}, 4)
	h.model.Hook(func(core.ModelRequest) { entered <- struct{}{} })

	type outcome struct {
		name  string
		err   error
		calls int // model calls past the block when then ran
	}
	got := make(chan outcome, 5)
	then := func(name string) func(error) {
		return func(err error) { got <- outcome{name, err, h.model.CallCount()} }
	}
	ctx := context.Background()
	h.eng.EnqueueThen(ctx, evMsg(h, "a", "ev-1", "first"), then("first"))
	<-entered // the first turn is in its model call
	h.eng.EnqueueThen(ctx, evMsg(h, "a", "ev-2", "second"), then("second"))
	gone, cancel := context.WithCancel(ctx)
	cancel()
	h.eng.EnqueueThen(gone, evMsg(h, "a", "ev-4", "third"), then("third")) // fails: its context ended
	h.eng.EnqueueThen(ctx, evMsg(h, "b", "ev-3", "/plan status"), then("status"))
	if o := <-got; o.name != "status" || o.err != nil {
		t.Fatalf("first outcome %+v, want the read-only command's, nil, while the turn runs", o)
	}
	h.model.Unblock()
	first, second, third := <-got, <-got, <-got
	if first.name != "first" || first.err != nil || first.calls != 1 {
		t.Fatalf("first outcome %+v, want nil, reported before the second's model call", first)
	}
	if second.name != "second" || second.err != nil || second.calls != 2 {
		t.Fatalf("second outcome %+v, want nil after the second model call", second)
	}
	if third.name != "third" || !errors.Is(third.err, context.Canceled) {
		t.Fatalf("third outcome %+v, want its context's error", third)
	}
	select {
	case o := <-got:
		t.Fatalf("an outcome reported twice: %+v", o)
	default:
	}
}
