package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/nudges"
)

// markFailStore fails MarkSent while failing is set, as a store that went away between a
// reply's send and its mark.
type markFailStore struct {
	core.Store
	failing atomic.Bool
	fails   atomic.Int32
}

func (s *markFailStore) MarkSent(ctx context.Context, id int64, platformID string, at time.Time) error {
	if s.failing.Load() {
		s.fails.Add(1)
		return errors.New("store unavailable")
	}
	return s.Store.MarkSent(ctx, id, platformID, at)
}

// A reply the platform took whose mark as sent failed is marked by the retry loop once
// the store is back, and never sent again: the chat gets it once, and the store has no
// unsent row and no dropped one.
func TestReplySentWhileItsMarkFailsIsMarkedNotResent(t *testing.T) {
	h := newHarness(t)
	out := newOutageSender(func() time.Time { return h.clock })
	st := &markFailStore{Store: h.st}
	h.eng = h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: st, Model: h.model, Tools: h.tools, Out: out,
		Now: func() time.Time { return h.clock }, NudgeSpecs: nudges.Specs{}}))
	ctx := context.Background()
	st.failing.Store(true)
	h.model.push(sessionID("a"), text("answer one"))
	if err := h.eng.Handle(ctx, core.Message{ID: "ev-1", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "question", Time: h.clock}); err != nil {
		t.Fatal(err)
	}
	if st.fails.Load() == 0 {
		t.Fatal("the reply's mark never failed: the test did not run its case")
	}
	for range 3 { // still out: each tick tries the mark, never the send
		h.clock = h.clock.Add(time.Minute)
		h.eng.RetryUnsent(ctx, nil, 24*time.Hour)
	}
	st.failing.Store(false)
	h.clock = h.clock.Add(time.Minute)
	h.eng.RetryUnsent(ctx, nil, 24*time.Hour)
	h.clock = h.clock.Add(time.Minute)
	h.eng.RetryUnsent(ctx, nil, 24*time.Hour)
	if got := out.texts("a"); len(got) != 1 || got[0] != "answer one" {
		t.Fatalf("the chat got %q, want the answer once", got)
	}
	unsent, err := h.st.UnsentOutbox(ctx, nil, 0)
	if err != nil || len(unsent) != 0 {
		t.Fatalf("unsent rows after the store came back: %+v (%v), want none", unsent, err)
	}
	dropped, err := h.st.DroppedOutbox(ctx, 0, 10)
	if err != nil || len(dropped) != 0 {
		t.Fatalf("dropped rows: %+v (%v), want none", dropped, err)
	}
}
